# replay-vm: deterministic record and replay of multiprocessor VMs.
#   make demo   record a multi-vCPU VM and replay it, print the verdict
#   make test   unit + integration tests (installs and builds what is missing)
PY      ?= /usr/bin/python3
STAMP   := build/.stamp
KVER     = $(shell vm-images/kver.sh)

.PHONY: all deps qemu kvm guest workloads plugins image kernel-check symbols rrlog tools test unit-test integration-test demo clean

all: qemu image tools

# apt + pip installs; quick when everything is already there
deps: $(STAMP)/deps
$(STAMP)/deps: ci/deps.sh
	bash ci/deps.sh
	@mkdir -p $(STAMP) && touch $@

rrlog: deps
	$(MAKE) -C rrlog

tools: rrlog
	$(MAKE) -C replay-tool

# cached outside the tree by (Debian source version, patch-series hash)
qemu: deps rrlog
	bash qemu-patches/build.sh build/qemu

# replay-vm's patched kvm.ko/kvm-amd.ko for the image kernel (issue 10),
# cached like QEMU; loaded in the nested L1 by tests/test_kvm_patch.py
kvm: deps
	bash kvm-patches/build.sh build/kvm

guest: deps
	$(MAKE) -C guest-module KVER=$(KVER)

workloads: deps
	$(MAKE) -C vm-images/workloads

# TCG plugins for benchmarks (guest-module/bench_dbt.py --insns)
plugins: qemu
	$(MAKE) -C bench/plugins

# the image, then its kernel checked against what the guest module relies
# on (symbols, layouts, arguments, the notrace list): a kernel Debian
# moved to fails here, naming what changed (docs/kernels.md)
image: guest workloads
	bash vm-images/build-image.sh build/image
	$(MAKE) --no-print-directory kernel-check

kernel-check: symbols
	$(PY) vm-images/check_kernel.py build/image

# kernel symbols for gdb on a replay and for kernel-check (boots the image
# once): kallsyms.txt/.elf (text), kallsyms-all.txt (every symbol, last)
SYMS := build/image/kallsyms-all.txt
symbols: $(SYMS)
$(SYMS): build/image/vmlinuz build/image/initramfs.cpio.gz vm-images/kallsyms_elf.py | qemu
	$(PY) vm-images/kallsyms_elf.py

unit-test: rrlog tools workloads guest
	$(MAKE) -C rrlog test
	$(MAKE) -C replay-tool test
	$(MAKE) -C guest-module/crew test
	$(MAKE) -C guest-module/test test
	$(MAKE) -C vm-images/workloads check
	$(PY) -m pytest -q vm-images/test_vmrun_unit.py vm-images/test_training_unit.py

integration-test: qemu image tools symbols plugins
	$(PY) -m pytest -q -x --durations=40 tests/

test: unit-test integration-test

# make test plus the record/replay runs of every workload at 2 and 4 vCPUs
# (tests/test_rr_smp.py; the default suite runs a 2-vCPU subset and the
# racy programs at 2 and 4) and the longer training tests
.PHONY: test-full experiment
test-full:
	REPLAYVM_FULL=1 $(MAKE) test

# page- vs byte-CREW side by side (issue 9): CSV, markdown and plots in
# EXP_OUT; the full run takes hours here, QUICK=1 a few minutes
EXP_OUT ?= build/experiment
experiment: qemu image tools
	$(PY) bench/experiment.py -v --out $(EXP_OUT) $(if $(QUICK),--quick) $(EXP_ARGS)

demo: qemu image tools
	DEMO_VCPUS=$(or $(VCPUS),2) DEMO_CREW=$(or $(CREW),page) $(PY) tests/demo.py

# replay-vm on PATH, the patched QEMU and the guest runner as private
# programs, the guest image as data, a man page made from --help
PREFIX  ?= /usr/local
LIBEXEC  = $(DESTDIR)$(PREFIX)/libexec/replay-vm
SHARE    = $(DESTDIR)$(PREFIX)/share/replay-vm
MAN1     = $(DESTDIR)$(PREFIX)/share/man/man1
IMAGE_FILES = vmlinux vmlinuz initramfs.cpio.gz data.img kallsyms.elf kallsyms.txt KVER SHA256SUMS
.PHONY: install uninstall
install: qemu image tools
	install -d $(DESTDIR)$(PREFIX)/bin $(LIBEXEC) $(SHARE)/image $(MAN1)
	install -m 755 replay-tool/replay-vm $(DESTDIR)$(PREFIX)/bin/replay-vm
	install -m 755 build/qemu/qemu-system-x86_64 vm-images/run vm-images/train $(LIBEXEC)/
	install -m 644 build/qemu/VERSION vm-images/vmrun.py vm-images/training.py $(LIBEXEC)/
	install -m 644 $(addprefix build/image/,$(IMAGE_FILES)) $(SHARE)/image/
	$(PY) replay-tool/mkman.py replay-tool/replay-vm > $(MAN1)/replay-vm.1

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/replay-vm $(MAN1)/replay-vm.1
	rm -rf $(LIBEXEC) $(SHARE)

clean:
	rm -rf build
	-$(MAKE) -C rrlog clean
	-$(MAKE) -C replay-tool clean
	-$(MAKE) -C guest-module clean
	-$(MAKE) -C vm-images/workloads clean
