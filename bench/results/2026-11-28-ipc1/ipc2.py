import sys, time, re
sys.path.insert(0, "/work/main/vm-images")
import vmrun
dbt = sys.argv[1] == "dbt"
pre = "insmod /opt/rv/replayvm.ko dbt=1; " if dbt else ""
r = vmrun.run(vcpus=1, cmd=pre + "/opt/rv/bin/ipc -n 2000 >/dev/null; grep ctxt /proc/stat; echo RVMARK start; /opt/rv/bin/ipc -n 50000; echo RVMARK end; grep ctxt /proc/stat", accel="tcg", timeout=600)
m = dict((l, t) for t, l in r.marks)
c = [int(x) for x in re.findall(r"ctxt (\d+)", r.console)]
print(sys.argv[1], r.status, round(m["RVMARK end"] - m["RVMARK start"], 2), "ctxt switches", c[1] - c[0])
