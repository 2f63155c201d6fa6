"""Parameters of the ``identification_service`` node (full descriptions: config/identification_service.yaml).

Changeable while it runs: ``allow_queue`` only (read when a request arrives; a job under way is not
touched). The directories are resolved once at start: what a request may read and write never changes
under a running service.
"""
from __future__ import annotations

from dvrk_ident_ros.parameters.schema import Kind, NodeSchema, Parameter

SCHEMA = NodeSchema("identification_service", (
    Parameter("output_directory", Kind.STRING, "identification",
              "The only directory /identify writes into (relative to the working directory)"),
    Parameter("data_directory", Kind.STRING, "",
              'Where a request\'s data files must be; "" = any regular file or directory this user can read'),
    Parameter("allow_queue", Kind.BOOL, False,
              "Queue a request that arrives while another runs; false = refuse it as busy; at run time: from "
              "the next request", runtime=True),
))
