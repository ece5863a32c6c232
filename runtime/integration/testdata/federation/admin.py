"""NVFlare's admin session API, one command per run; prints one JSON line.

usage: admin.py ADMIN_KIT submit JOB_FOLDER | status JOB_ID | abort JOB_ID
"""

import json
import sys

from nvflare.fuel.flare_api.flare_api import new_secure_session

kit, command, arg = sys.argv[1:4]
session = new_secure_session("admin@nvidia.com", kit, timeout=60)
try:
    if command == "submit":
        answer = {"job_id": session.submit_job(arg)}
    elif command == "status":
        answer = {"status": session.get_job_meta(arg).get("status")}
    elif command == "abort":
        session.abort_job(arg)
        answer = {"aborted": arg}
    else:
        raise SystemExit(f"unknown command {command}")
finally:
    session.close()
print(json.dumps(answer), flush=True)
