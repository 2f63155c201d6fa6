"""The package's jobs (ROS-free at import): the offline jobs over recordings (identification, gc fit, gravity
refit), the launch plans and the process runner behind ``dvrk-ident launch``, and the calibration jobs that
drive nodes as processes. The nodes (``nodes``) and the command line (``app``) both call them; neither imports
the other."""
