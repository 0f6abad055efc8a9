"""The embedded mode's server (``make run``: ``daphne config.embedded:application``).

Skein's ASGI application, plus what the full mode's beat does, in this one process: interrupted
turns are recovered at start and published schedules fire (``workflows.embedded``).
"""

from config.asgi import application  # noqa: F401  (what daphne serves)
from workflows import embedded

embedded.start()
