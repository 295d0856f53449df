kvm_load
L2_APPEND="$L2_APPEND tsc_early_khz=2000000"
export RRVM_FORCE_MS=300
for i in 1 2 3 4 5; do
	eval "timeout -s KILL 150 $(l2_argv 1 '/opt/rv/bin/ipc -n 50 | tail -1')" -rr record,log=/tmp/f.rr > /tmp/frec.out 2>&1
	grep -a -h "forced stops" /tmp/frec.out | sed "s/^/FR$i: rec: /"
	/opt/nested/bin/replay-vm dump /tmp/f.rr 2>/dev/null | grep -a ',dp=' | sed "s/^/FR$i: dp: /"
done
echo "FR: done"
