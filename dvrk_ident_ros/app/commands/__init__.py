"""The ``dvrk-ident`` subcommands, one module per subject (model, excitation, identify, gc)."""
