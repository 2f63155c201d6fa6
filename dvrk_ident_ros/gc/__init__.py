"""MTM and dVRK gravity compensation, in four rooms by the life of the code (each imports only the rooms
before it): ``model``, the gc file's model that every life shares (the 40-parameter regressor, its
symbolic derivation, gc JSON, the console's kinematic_gc files, the cable's direction state);
``fitting``, estimating a file from recorded poses (pose data and bags, MLSE and its regularised form,
the held-out folds, the static gravity refit); ``validation``, scoring estimates on poses they did not
see and the format's bound; ``runtime``, the compensation a node commands while the arm runs (the law,
its supervisor, the take-over and its guard, the fit check, ownership and the safety net)."""
