kvm_load
L2_APPEND="$L2_APPEND tsc_early_khz=2000000 lpj=4000000"
W="/opt/rv/bin/ipc -n 50 | tail -1"
export RRVM_STALL_SECONDS=20
stalls=0
for i in 1 2 3 4; do
	export RRVM_KVM_TRACE=/tmp/rec.tr
	( eval "exec $(l2_argv 2 "$W") -rr record,log=/tmp/smp.rr" ) > /tmp/smprec.out 2>&1 &
	qp=$!
	t=0
	while [ $t -lt 300 ] && kill -0 $qp 2>/dev/null; do
		sleep 5; t=$((t + 5))
		n=$(/opt/nested/bin/replay-vm dump /tmp/smp.rr 2>/dev/null | grep -a -c -E "cpu1 .* interrupt init")
		[ "$n" -ge 2 ] && break
	done
	sleep 10
	kill -TERM $qp 2>/dev/null
	wait $qp
	echo "ST$i: ap by ${t}s record status $?"
	export RRVM_KVM_TRACE=/tmp/rep.tr
	timeout -s KILL 300 sh -c "$(l2_argv 2 "$W") -rr replay,log=/tmp/smp.rr" > /tmp/smprep.out 2>&1
	echo "ST$i: replay status $?"
	unset RRVM_KVM_TRACE
	grep -a -e "replay-vm" -e "expected at" -e "found at" -e "DIVERG" /tmp/smprep.out | head -20 | sed "s/^/ST$i: rep: /"
	grep -a -e "replay-vm" /tmp/smprec.out | head -20 | sed "s/^/ST$i: rec: /"
	ev=$(grep -a -o "DIVERGENCE at event #[0-9]*" /tmp/smprep.out | head -1 | grep -o "[0-9]*$")
	wc -l /tmp/rec.tr /tmp/rep.tr | sed "s/^/ST$i: wc: /"
	[ -z "$ev" ] && continue
	stalls=$((stalls + 1))
	/opt/nested/bin/replay-vm dump /tmp/smp.rr > /tmp/smp.txt 2>&1
	lo=$((ev - 25)); hi=$((ev + 12))
	grep -a -n "" /tmp/smp.txt | awk -F: -v lo=$lo -v hi=$hi '{ if (match($2, /^#[0-9]+/)) { k = substr($2, 2, RLENGTH - 1) + 0; if (k >= lo && k <= hi) print } }' | cut -d: -f2- | sed "s/^/ST$i: ev: /"
	for c in 0 1; do
		grep -a "cpu=$c " /tmp/rec.tr | cut -d' ' -f3- > /tmp/rc$c
		grep -a "cpu=$c " /tmp/rep.tr | cut -d' ' -f3- > /tmp/pc$c
		nr=$(wc -l < /tmp/rc$c); np=$(wc -l < /tmp/pc$c)
		d=$(cmp /tmp/rc$c /tmp/pc$c 2>&1 | grep -o "line [0-9]*" | grep -o "[0-9]*")
		echo "ST$i: cpu$c rec exits $nr rep exits $np first diff line ${d:-none}"
		[ -z "$d" ] && d=$np
		a=$((d - 6)); [ $a -lt 1 ] && a=1
		sed -n "${a},$((d + 3))p" /tmp/rc$c | sed "s/^/ST$i: cpu$c rec: /"
		sed -n "${a},$((d + 3))p" /tmp/pc$c | sed "s/^/ST$i: cpu$c rep: /"
	done
	# the interleaving at the end of the replay's trace
	tail -30 /tmp/rep.tr | sed "s/^/ST$i: reptail: /"
	[ $stalls -ge 2 ] && break
done
echo "ST: done"
