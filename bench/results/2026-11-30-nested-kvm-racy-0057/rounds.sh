kvm_load || exit 1
L2_APPEND="$L2_APPEND tsc_early_khz=2000000 lpj=4000000"
export RRVM_STALL_SECONDS=60
dump() {
	p=$1
	for t in /proc/$p/task/*; do echo "T $(cat $t/comm) $(cut -d' ' -f3 $t/stat) sys=$(cut -d' ' -f1 $t/syscall) wchan=$(cat $t/wchan)"; done
	grep -a "replay-vm" /tmp/out.txt | tail -12 | sed 's/^/OUT /'
	tail -5 /tmp/out.txt | sed 's/^/OUTT /'
}
now() { cut -d' ' -f1 /proc/uptime; }
for i in 1 2 3 4; do
	rm -f /tmp/run.rr
	s=$(now)
	( eval "exec $(l2_argv 2 '/opt/rv/bin/racy_kernel -p 2 -n 200 | tail -1')" -rr record,log=/tmp/run.rr,timescale=10 > /tmp/out.txt 2>&1 ) &
	el=0
	while :; do
		sleep 10; el=$((el+10))
		p=$(pidof qemu-system-x86_64)
		[ -z "$p" ] && break
		if grep -q "has logged no event" /tmp/out.txt || [ $el -ge 700 ]; then echo "STALL round $i after $el s"; dump $p; kill -9 $p; break; fi
	done
	wait
	echo "REC $i $(awk -v a=$s -v b=$(now) 'BEGIN{print b-a}') s: $(grep -a -m1 '^RESULT' /tmp/out.txt)"
	echo "RECEV $i $(/opt/nested/bin/replay-vm info /tmp/run.rr 2>&1 | grep -a '^events')"
	grep -a -m1 '^RESULT' /tmp/out.txt > /tmp/want.txt || continue
	s=$(now)
	eval "timeout -s KILL 900 $(l2_argv 2 '/opt/rv/bin/racy_kernel -p 2 -n 200 | tail -1')" -rr replay,log=/tmp/run.rr > /tmp/rep.txt 2>&1
	st=$?
	same=no; grep -a -m1 '^RESULT' /tmp/rep.txt | cmp -s - /tmp/want.txt && same=yes
	echo "REP $i $(awk -v a=$s -v b=$(now) 'BEGIN{print b-a}') s status $st same_result=$same: $(grep -a -o -m1 -e 'REPLAY OK[^(]*' -e 'DIVERGENCE at event #[0-9]*' /tmp/rep.txt)"
	grep -a -e "forced stops" /tmp/out.txt /tmp/rep.txt | sed "s/^/FS $i /"
done
echo "NB done"
