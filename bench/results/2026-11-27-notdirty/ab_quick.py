import sys, time, statistics
sys.path.insert(0, "/work/main/vm-images")
import vmrun
bins = sys.argv[1:]
res = {b: {"plain": [], "rec": []} for b in bins}
cmd = "cd /opt/rv/bin; ./forkwait -n 300; ./ipc -n 20000; ./read -n 2000"
for i in range(4):
    order = bins if i % 2 == 0 else bins[::-1]
    for b in order:
        for mode in ("plain", "rec"):
            kw = dict(record="/tmp/xm/q.rr") if mode == "rec" else {}
            t = time.time()
            r = vmrun.run(vcpus=2, accel="tcg", cmd=cmd, qemu=b, timeout=300, **kw)
            res[b][mode].append(time.time() - t)
for b in bins:
    print(b, {m: "%.1f" % statistics.median(v) for m, v in res[b].items()}, {m: ["%.1f" % x for x in v] for m, v in res[b].items()})
