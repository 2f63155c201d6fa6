"""What the package knows of a live arm, in one place (ROS-free): the arm registry (``registry``: each family's
traits), its operating state (``state``), its joint-state samples as a commanding node reads them (``samples``,
``state_rate``), ``dvrk-ident arm-check`` (``check``) and the player's phases (``player_phase``). The checks every
command passes (``dvrk_ident_ros/safety.py``) need the model, which itself reads the registry: they stay apart."""
