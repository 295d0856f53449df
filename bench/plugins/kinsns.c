/*
 * kinsns: a QEMU TCG plugin that counts the instructions each vCPU runs in
 * the kernel half of the address space (the kernel, its modules and the
 * guest module's code cache) and in the user half.
 *
 * Why: under TCG the time of translated kernel code is dominated by QEMU's
 * TB lookups, which hardware does not have, and this host is too noisy to
 * resolve 10 % in time.  The count of instructions a workload makes the
 * kernel run, native against translated, is what the translator adds on
 * any accelerator, and it hardly varies between runs.
 *
 * A guest program marks phases by running "xchg %bx,%bx" (66 87 db) in
 * user mode (vm-images/workloads/mark.c); at each mark the plugin writes
 * "KINSNS <mark#> <kernel> <user>", totals over all vCPUs so far, to
 * QEMU's log (-d plugin -D FILE).
 *
 *   qemu-system-x86_64 -plugin build/plugins/libkinsns.so -d plugin -D log ...
 *
 * Each mark also writes "KMEM <mark#> <n>": the memory accesses kernel
 * instructions made so far (one counter for all vCPUs, exact at 1 vCPU).
 * Under TCG a memory access costs a softmmu TLB lookup, an order of
 * magnitude more than a register operation, so it is the count that
 * tracks the time of instrumented code best.
 *
 * With -plugin ...,hot=N each mark also lists the N kernel TBs that ran
 * the most instructions since the previous mark ("KHOT vaddr insns
 * execs"): where a difference between two runs comes from.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <qemu-plugin.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

#define KERNEL_HALF 0xffff800000000000ULL
#define MAX_VCPUS 64

/* one cache line per vCPU: each vCPU thread writes only its own */
struct count {
	uint64_t kernel, user;
	uint64_t pad[6];
};
static struct count counts[MAX_VCPUS];
static uint64_t marks;
static uint64_t kmem;		/* inline-incremented: racy above 1 vCPU */

/* hot=N: every kernel TB translated, with its executions since the last mark */
struct tbinfo {
	uint64_t vaddr, execs;
	uint32_t kernel;
};
static unsigned int hot;
static struct tbinfo **tbs;
static size_t ntbs, captbs;
static pthread_mutex_t tbs_lock = PTHREAD_MUTEX_INITIALIZER;

static struct tbinfo *tb_new(uint64_t vaddr, uint32_t kernel)
{
	struct tbinfo *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->vaddr = vaddr;
	t->kernel = kernel;
	pthread_mutex_lock(&tbs_lock);
	if (ntbs == captbs) {
		size_t cap = captbs ? 2 * captbs : 4096;
		struct tbinfo **n = realloc(tbs, cap * sizeof(*n));

		if (!n) {
			pthread_mutex_unlock(&tbs_lock);
			free(t);
			return NULL;
		}
		tbs = n;
		captbs = cap;
	}
	tbs[ntbs++] = t;
	pthread_mutex_unlock(&tbs_lock);
	return t;
}

static void hot_exec(unsigned int vcpu, void *udata)
{
	__atomic_fetch_add(&((struct tbinfo *)udata)->execs, 1, __ATOMIC_RELAXED);
}

static int by_insns(const void *a, const void *b)
{
	const struct tbinfo *x = *(struct tbinfo * const *)a, *y = *(struct tbinfo * const *)b;
	uint64_t nx = x->execs * x->kernel, ny = y->execs * y->kernel;

	return nx < ny ? 1 : nx > ny ? -1 : 0;
}

/* the top TBs since the last mark, then their counts start again */
static void hot_report(void)
{
	char line[96];
	size_t i;

	pthread_mutex_lock(&tbs_lock);
	qsort(tbs, ntbs, sizeof(*tbs), by_insns);
	for (i = 0; i < ntbs && i < hot && tbs[i]->execs; i++) {
		snprintf(line, sizeof(line), "KHOT %" PRIx64 " %" PRIu64 " %" PRIu64 "\n",
			 tbs[i]->vaddr, tbs[i]->execs * tbs[i]->kernel, tbs[i]->execs);
		qemu_plugin_outs(line);
	}
	for (i = 0; i < ntbs; i++)
		__atomic_store_n(&tbs[i]->execs, 0, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&tbs_lock);
}

/* udata: kernel insns in the low 32 bits, user insns in the high */
static void tb_exec(unsigned int vcpu, void *udata)
{
	uintptr_t n = (uintptr_t)udata;

	if (vcpu >= MAX_VCPUS)
		return;
	counts[vcpu].kernel += n & 0xffffffffu;
	counts[vcpu].user += n >> 32;
}

static void mark(unsigned int vcpu, void *udata)
{
	uint64_t k = 0, u = 0;
	char line[96];
	int i;

	for (i = 0; i < MAX_VCPUS; i++) {
		k += __atomic_load_n(&counts[i].kernel, __ATOMIC_RELAXED);
		u += __atomic_load_n(&counts[i].user, __ATOMIC_RELAXED);
	}
	snprintf(line, sizeof(line), "KINSNS %" PRIu64 " %" PRIu64 " %" PRIu64 "\n",
		 ++marks, k, u);
	qemu_plugin_outs(line);
	snprintf(line, sizeof(line), "KMEM %" PRIu64 " %" PRIu64 "\n", marks,
		 __atomic_load_n(&kmem, __ATOMIC_RELAXED));
	qemu_plugin_outs(line);
	if (hot)
		hot_report();
}

static const uint8_t marker[] = { 0x66, 0x87, 0xdb };

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t i, n = qemu_plugin_tb_n_insns(tb);
	uint64_t k = 0, u = 0;

	for (i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		uint64_t va = qemu_plugin_insn_vaddr(insn);

		if (va >= KERNEL_HALF) {
			k++;
			qemu_plugin_register_vcpu_mem_inline(insn, QEMU_PLUGIN_MEM_RW,
							     QEMU_PLUGIN_INLINE_ADD_U64,
							     &kmem, 1);
			continue;
		}
		u++;
		if (qemu_plugin_insn_size(insn) == sizeof(marker) &&
		    !memcmp(qemu_plugin_insn_data(insn), marker, sizeof(marker)))
			qemu_plugin_register_vcpu_insn_exec_cb(insn, mark,
							       QEMU_PLUGIN_CB_NO_REGS, NULL);
	}
	qemu_plugin_register_vcpu_tb_exec_cb(tb, tb_exec, QEMU_PLUGIN_CB_NO_REGS,
					     (void *)(uintptr_t)(k | (u << 32)));
	if (hot && k) {
		struct tbinfo *t = tb_new(qemu_plugin_tb_vaddr(tb), (uint32_t)k);

		if (t)
			qemu_plugin_register_vcpu_tb_exec_cb(tb, hot_exec,
							     QEMU_PLUGIN_CB_NO_REGS, t);
	}
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id,
					   const qemu_info_t *info,
					   int argc, char **argv)
{
	if (info->system_emulation && info->system.max_vcpus > MAX_VCPUS) {
		fprintf(stderr, "kinsns: at most %d vCPUs\n", MAX_VCPUS);
		return -1;
	}
	for (int i = 0; i < argc; i++) {
		if (!strncmp(argv[i], "hot=", 4)) {
			hot = strtoul(argv[i] + 4, NULL, 10);
		} else {
			fprintf(stderr, "kinsns: unknown argument '%s' (hot=N)\n", argv[i]);
			return -1;
		}
	}
	qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
	return 0;
}
