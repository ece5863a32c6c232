"""A client training script that ends the client job process with exit code 101
(NVFlare's ProcessExitCode.EXCEPTION), as a worker that hit an exception does."""

import os

os._exit(101)
