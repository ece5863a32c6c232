"""The federation benchmark's admin: submits one job folder N times through
NVFlare's admin session API, waits until every one of them is FINISHED (or
the deadline passes) and writes each job's meta as JSON.

usage: bench_admin.py ADMIN_KIT JOB_FOLDER N DEADLINE_SECONDS OUT_JSON

It prints one JSON line when all N are submitted ({"submitted": N}). OUT_JSON
holds {"jobs": [{job_id, status, submit_time, start_time, duration}],
"unfinished": [job ids]}: the server's own times (submit_time in seconds
since the epoch, start_time when the job began RUNNING, duration until its
FINISHED status).
"""

import json
import sys
import time

from nvflare.fuel.flare_api.flare_api import new_secure_session

kit, folder, n, deadline, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
end = time.time() + deadline
session = new_secure_session("admin@nvidia.com", kit, timeout=60)
try:
    ids = [session.submit_job(folder) for _ in range(n)]
    print(json.dumps({"submitted": len(ids)}), flush=True)
    pending = set(ids)
    while pending and time.time() < end:
        time.sleep(1)
        for job in session.list_jobs():
            status = str(job.get("status", ""))
            if job.get("job_id") in pending and status.startswith("FINISHED"):
                pending.discard(job["job_id"])
    jobs = []
    for job_id in ids:
        meta = session.get_job_meta(job_id)
        jobs.append({k: meta.get(k) for k in ("job_id", "status", "submit_time", "start_time", "duration")})
finally:
    session.close()
with open(out, "w") as f:
    json.dump({"jobs": jobs, "unfinished": sorted(pending)}, f, indent=1)
