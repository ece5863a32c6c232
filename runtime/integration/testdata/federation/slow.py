"""A client training script that never finishes: the job runs until aborted."""

import time

import nvflare.client as flare

flare.init()
time.sleep(3600)
