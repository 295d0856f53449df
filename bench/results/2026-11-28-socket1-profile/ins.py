import sys, os, re
sys.path.insert(0, "/work/main/vm-images")
import vmrun
PLUGIN = "/work/main/build/plugins/libkinsns.so"
mode = sys.argv[1]; w = sys.argv[2] if len(sys.argv) > 2 else "./read -n 300"
log = "/tmp/p8/kinsns-%s-%s.log" % (mode, os.environ.get("TAG","x"))
extra = ["-plugin", PLUGIN + ",hot=" + os.environ.get("HOT","40"), "-d", "plugin", "-D", log]
cmd = "cd /opt/rv/bin; ./mark; %s; ./mark; %s; ./mark; cat /proc/replayvm | head -100; cat /sys/module/replayvm/sections/.text /sys/module/replayvm/sections/.text.unlikely" % (w, w)
kw = dict(vcpus=int(os.environ.get("V","1")), image=os.environ.get("IMG","/work/main/build/image"), cmd=cmd, timeout=int(os.environ.get("TO","600")), accel="tcg", serial_log="/tmp/p8/console-%s.txt" % os.environ.get("TAG","x"), extra=extra)
if mode == "byte":
    r = vmrun.run(record="/tmp/p8/ins.rr", crew="byte", **kw)
elif mode == "dbt":
    r = vmrun.run(module=True, append_extra="rv.modparams=dbt=1", **kw)
else:
    r = vmrun.run(**kw)
print(r.status)
print(r.output[-6000:])
print(re.findall(r"^KINSNS.*$", open(log).read(), re.M))
