"""A server component whose import ends the server job process with exit code 3."""

import os

os._exit(3)
