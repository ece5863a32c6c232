# make bench-federation with FLARE_SLURM_BENCH_TRACEMALLOC=DIR: Python
# imports this module at start-up from the first directory of PYTHONPATH.
# In an NVFlare parent (its argv names fed_server.json or fed_client.json)
# it starts tracemalloc and, every 10 s, writes the parent's 60 largest
# allocation sites by line and its 15 largest by traceback to
# FLARE_SLURM_BENCH_TM_DIR/tm-PID-N.txt (compare.py compares them). Every
# other Python process is left alone.
import os
import sys
import threading
import time

_dir = os.environ.get("FLARE_SLURM_BENCH_TM_DIR")
if _dir and any(a.endswith(("fed_server.json", "fed_client.json")) for a in sys.argv):
    import tracemalloc

    tracemalloc.start(10)

    def _dump():
        n = 0
        while True:
            time.sleep(10)
            try:
                snap = tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(False, tracemalloc.__file__)])
                cur, peak = tracemalloc.get_traced_memory()
                path = os.path.join(_dir, "tm-%d-%04d.txt" % (os.getpid(), n))
                with open(path + ".tmp", "w") as f:
                    f.write("argv %r\ntime %f\ncurrent %d peak %d threads %d\n"
                            % (sys.argv, time.time(), cur, peak, threading.active_count()))
                    f.write("## by lineno\n")
                    for st in snap.statistics("lineno")[:60]:
                        f.write("%d %d %s\n" % (st.size, st.count, st.traceback[0]))
                    f.write("## by traceback\n")
                    for st in snap.statistics("traceback")[:15]:
                        f.write("== %d %d\n" % (st.size, st.count))
                        for line in st.traceback.format():
                            f.write(line + "\n")
                os.rename(path + ".tmp", path)
                n += 1
            except Exception as e:  # a failed dump must not touch the parent
                sys.stderr.write("tracemalloc dump: %r\n" % (e,))

    threading.Thread(target=_dump, name="flare-slurm-bench-tracemalloc", daemon=True).start()
