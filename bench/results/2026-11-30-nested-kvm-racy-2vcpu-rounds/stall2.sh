kvm_load || exit 1
L2_APPEND="$L2_APPEND tsc_early_khz=2000000 lpj=4000000"
export RRVM_STALL_SECONDS=40
T=/sys/kernel/tracing
[ -d $T/events ] || mount -t tracefs none $T
ls $T/events/kvm >/dev/null 2>&1 && echo "TRACEFS ok" || echo "TRACEFS missing"
dump() {
	p=$1
	for t in /proc/$p/task/*; do echo "T $(cat $t/comm) $(cut -d' ' -f3 $t/stat) sys=$(cut -d' ' -f1 $t/syscall) wchan=$(cat $t/wchan)"; cat $t/stack 2>/dev/null | head -6 | sed 's/^/TS /'; done
	grep -a "replay-vm" /tmp/out.txt | tail -6 | sed 's/^/OUT /'
	echo > $T/trace
	echo 1 > $T/events/kvm/kvm_exit/enable
	echo 1 > $T/events/kvm/kvm_userspace_exit/enable
	echo 1 > $T/events/kvm/kvm_page_fault/enable
	echo 1 > $T/events/kvm/kvm_msr/enable
	sleep 3
	echo 0 > $T/events/kvm/enable
	echo "KX $(grep -c kvm_exit $T/trace) exits, $(grep -c kvm_userspace_exit $T/trace) userspace"
	grep -o 'vcpu [0-9]* reason [A-Za-z_]* rip 0x[0-9a-f]*' $T/trace | sort | uniq -c | sort -rn | head -20 | sed 's/^/KR /'
	grep -v '^#' $T/trace | head -30 | sed 's/^/KT /'
	grep -o 'kvm_page_fault.*' $T/trace | sort | uniq -c | sort -rn | head -8 | sed 's/^/KP /'
	grep -o 'kvm_msr.*' $T/trace | sort | uniq -c | sort -rn | head -8 | sed 's/^/KM /'
}
now() { cut -d' ' -f1 /proc/uptime; }
for i in 1 2 3 4 5 6 7 8 9 10; do
	rm -f /tmp/run.rr
	s=$(now)
	( eval "exec $(l2_argv 2 '/opt/rv/bin/racy_kernel -p 2 -n 200 | tail -1')" -rr record,log=/tmp/run.rr,timescale=10 > /tmp/out.txt 2>&1 ) &
	el=0
	while :; do
		sleep 10; el=$((el+10))
		p=$(pidof qemu-system-x86_64)
		[ -z "$p" ] && break
		if grep -q "has logged no event" /tmp/out.txt || [ $el -ge 600 ]; then echo "STALL round $i after $el s"; dump $p; kill -9 $p; break; fi
	done
	wait
	echo "REC $i $(awk -v a=$s -v b=$(now) 'BEGIN{print b-a}') s: $(grep -a -m1 '^RESULT' /tmp/out.txt)"
	echo "RECEV $i $(/opt/nested/bin/replay-vm info /tmp/run.rr 2>&1 | grep -a '^events')"
done
echo "NB done"
