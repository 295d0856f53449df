/*
 * Unit test of replay_argv(): the replay command lines made from our
 * runner's recorded command line and from a libvirt-generated one.
 * Run: make -C replay-tool test (or ./test_replay_cmdline).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "replay_cmdline.h"

static int failures;

#define CHECK(cond) do { if (!(cond)) { \
	fprintf(stderr, "%s:%d: FAILED %s\n", __FILE__, __LINE__, #cond); \
	failures++; } } while (0)

static char **make(const char **cmd, size_t n, const char *extra, char *why)
{
	Rr__Header h = RR__HEADER__INIT;

	h.cmdline = (char **)cmd;
	h.n_cmdline = n;
	return replay_argv(&h, "/logs/run.rr", NULL, extra, why, 256);
}

static size_t count(char **argv)
{
	size_t n = 0;

	while (argv[n])
		n++;
	return n;
}

/* index of the option @opt whose value starts with @val (NULL: any), or -1 */
static int find(char **argv, const char *opt, const char *val)
{
	for (int i = 0; argv[i]; i++)
		if (!strcmp(argv[i], opt) &&
		    (!val || (argv[i + 1] && !strncmp(argv[i + 1], val, strlen(val)))))
			return i;
	return -1;
}

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* vm-images/vmrun.py's command line: only -rr and -netdev change */
static void test_runner(void)
{
	static const char *cmd[] = {
		"/q/qemu-system-x86_64", "-L", "/usr/share/qemu", "-M", "pc",
		"-smp", "2", "-display", "none", "-monitor", "none",
		"-serial", "stdio", "-no-reboot", "-kernel", "/i/vmlinuz",
		"-append", "console=ttyS0 rv.cmd=eA==",
		"-accel", "tcg,thread=multi",
		"-drive", "file=/i/data.img,if=virtio,format=raw,snapshot=on",
		"-netdev", "user,id=n0",
		"-device", "virtio-net-pci,netdev=n0,romfile=",
		"-rr", "record,log=/tmp/x.rr",
	};
	char why[256], **a = make(cmd, N(cmd), ",until=5", why);

	CHECK(a != NULL);
	if (!a)
		return;
	CHECK(count(a) == N(cmd));
	for (size_t i = 0; i < N(cmd); i++) {
		if (i > 0 && !strcmp(cmd[i - 1], "-netdev"))
			CHECK(!strcmp(a[i], "hubport,id=n0,hubid=0"));
		else if (i > 0 && !strcmp(cmd[i - 1], "-rr"))
			CHECK(!strcmp(a[i], "replay,log=/logs/run.rr,until=5"));
		else
			CHECK(!strcmp(a[i], cmd[i]));
	}
}

/* the runner's HMP socket (for its timeout dump) is gone by replay time */
static void test_monitor_socket(void)
{
	static const char *cmd[] = {
		"qemu", "-serial", "stdio",
		"-monitor", "unix:/tmp/rv-run-x/hmp,server=on,wait=off",
		"-rr", "record,log=/tmp/x.rr",
	};
	static const char *cmd2[] = {
		"qemu", "-monitor", "stdio", "-rr", "record,log=/tmp/x.rr",
	};
	char why[256], **a = make(cmd, N(cmd), "", why), **b = make(cmd2, N(cmd2), "", why);

	CHECK(a && find(a, "-monitor", "none") == 3 && count(a) == N(cmd));
	CHECK(b && find(b, "-monitor", "stdio") == 1);
}

/* what libvirt 9.0 runs for vm-images/libvirt/record-domain.xml.in */
static void test_libvirt(void)
{
	static const char *cmd[] = {
		"/q/qemu-system-x86_64", "-name", "guest=rr1,debug-threads=on",
		"-S",
		"-object", "{\"qom-type\":\"secret\",\"id\":\"masterKey0\",\"format\":\"raw\",\"file\":\"/var/lib/libvirt/qemu/domain-1-rr1/master-key.aes\"}",
		"-machine", "pc-i440fx-7.2,usb=off,dump-guest-core=off,memory-backend=pc.ram",
		"-accel", "tcg",
		"-object", "{\"qom-type\":\"memory-backend-ram\",\"id\":\"pc.ram\",\"size\":536870912}",
		"-smp", "2,sockets=2,cores=1,threads=1",
		"-no-user-config", "-nodefaults",
		"-chardev", "socket,id=charmonitor,fd=27,server=on,wait=off",
		"-mon", "chardev=charmonitor,id=monitor,mode=control",
		"-rtc", "base=utc", "-no-shutdown", "-boot", "strict=on",
		"-kernel", "/i/vmlinuz",
		"-blockdev", "{\"driver\":\"file\",\"filename\":\"/i/data.img\",\"node-name\":\"libvirt-1-storage\",\"auto-read-only\":true}",
		"-netdev", "{\"type\":\"user\",\"id\":\"hostnet0\"}",
		"-device", "{\"driver\":\"virtio-net-pci\",\"netdev\":\"hostnet0\",\"id\":\"net0\"}",
		"-add-fd", "set=0,fd=29,opaque=serial0-log",
		"-chardev", "file,id=charserial0,path=/dev/fdset/0,append=on",
		"-device", "{\"driver\":\"isa-serial\",\"chardev\":\"charserial0\",\"id\":\"serial0\",\"index\":0}",
		"-chardev", "pty,id=charserial1",
		"-sandbox", "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny",
		"-L", "/usr/share/qemu",
		"-rr", "record,log=/tmp/lv/run.rr,crew=page",
		"-msg", "timestamp=on",
	};
	char why[256], **a = make(cmd, N(cmd), "", why);
	int i;

	CHECK(a != NULL);
	if (!a)
		return;
	for (const char **d = (const char *[]){ "-S", "-mon", "-no-shutdown",
			"-add-fd", "-sandbox", "-msg", NULL }; *d; d++)
		CHECK(find(a, *d, NULL) < 0);
	CHECK(find(a, "-object", "{\"qom-type\":\"secret\"") < 0);
	CHECK(find(a, "-object", "{\"qom-type\":\"memory-backend-ram\"") > 0);
	CHECK(find(a, "-chardev", "socket") < 0);
	CHECK(find(a, "-chardev", "stdio,id=charserial0") > 0);
	CHECK(find(a, "-chardev", "null,id=charserial1") > 0);
	i = find(a, "-netdev", NULL);
	CHECK(i > 0 && !strcmp(a[i + 1], "hubport,id=hostnet0,hubid=0"));
	i = find(a, "-rr", NULL);
	CHECK(i > 0 && !strcmp(a[i + 1], "replay,log=/logs/run.rr"));
	CHECK(find(a, "-blockdev", "{\"driver\":\"file\"") > 0);
	CHECK(find(a, "-name", "guest=rr1") == 1);
	CHECK(find(a, "-L", "/usr/share/qemu") > 0);
	CHECK(find(a, "-nodefaults", NULL) > 0);
	CHECK(count(a) == N(cmd) - 2 * 6 - 2);
}

/* a console already on stdio keeps it; a file console then goes to null */
static void test_stdio_taken(void)
{
	static const char *cmd[] = {
		"qemu", "-serial", "stdio",
		"-chardev", "file,id=c1,path=/tmp/c1",
		"-netdev", "tap,id=t0,fd=20",
		"--rr", "record,log=/tmp/x.rr",
	};
	char why[256], **a = make(cmd, N(cmd), "", why);

	CHECK(a != NULL);
	if (!a)
		return;
	CHECK(find(a, "-chardev", "null,id=c1") > 0);
	CHECK(find(a, "-netdev", "hubport,id=t0,hubid=0") > 0);
	CHECK(find(a, "--rr", "replay,log=/logs/run.rr") > 0);
}

static void test_no_rr(void)
{
	static const char *cmd[] = { "qemu", "-S", "-m", "512" };
	char why[256] = "", **a = make(cmd, N(cmd), "", why);

	CHECK(a == NULL);
	CHECK(strstr(why, "no -rr option") != NULL);
	a = make(cmd, 0, "", why);
	CHECK(a == NULL);
}

/*
 * An image made beside the log (record --binary's initrd) is found there
 * when the log has moved, and the command line is changed to name it.
 */
static void test_image_beside_the_log(void)
{
	char dir[] = "/tmp/rv-cmdline-XXXXXX", log[256], img[256], buf[256];
	const char *p;
	FILE *f;

	if (!mkdtemp(dir)) {
		CHECK(!"mkdtemp");
		return;
	}
	snprintf(log, sizeof(log), "%s/run.rr", dir);
	snprintf(img, sizeof(img), "%s/run.rr.initrd", dir);
	f = fopen(img, "w");
	CHECK(f != NULL);
	if (f)
		fclose(f);
	/* there: as recorded */
	CHECK(replay_image_path(img, log, buf, sizeof(buf)) == img);
	/* recorded elsewhere, now beside the log */
	p = replay_image_path("/gone/away/run.rr.initrd", log, buf, sizeof(buf));
	CHECK(p == buf && !strcmp(p, img));
	/* nowhere */
	CHECK(replay_image_path("/gone/away/other", log, buf, sizeof(buf)) == NULL);
	CHECK(replay_image_path("/gone/away/run.rr.initrd", "/elsewhere/run.rr",
				buf, sizeof(buf)) == NULL);
	unlink(img);
	rmdir(dir);

	char *argv[] = {
		strdup("qemu"), strdup("-initrd"), strdup("/gone/i"),
		strdup("-drive"), strdup("file=/gone/i,if=virtio"),
		strdup("-blockdev"), strdup("{\"filename\":\"/gone/i\",\"x\":\"/gone/i2\"}"),
		strdup("-append"), strdup("root=/gone/i/x /gone/i"), NULL,
	};
	CHECK(replay_argv_subst(argv, "/gone/i", "/new/dir/i") == 3);
	CHECK(!strcmp(argv[2], "/new/dir/i"));
	CHECK(!strcmp(argv[4], "file=/new/dir/i,if=virtio"));
	CHECK(!strcmp(argv[6], "{\"filename\":\"/new/dir/i\",\"x\":\"/gone/i2\"}"));
	/* a longer path, and a path after a space, are not the image */
	CHECK(!strcmp(argv[8], "root=/gone/i/x /gone/i"));
	/* a replacement that contains the old path is not replaced again */
	CHECK(replay_argv_subst(argv, "/new/dir/i", "/new/dir/i,/new/dir/i") == 3);
	CHECK(!strcmp(argv[2], "/new/dir/i,/new/dir/i"));
	for (char **a = argv; *a; a++)
		free(*a);
}

int main(void)
{
	test_runner();
	test_monitor_socket();
	test_libvirt();
	test_stdio_taken();
	test_no_rr();
	test_image_beside_the_log();
	if (failures) {
		fprintf(stderr, "test_replay_cmdline: %d failure(s)\n", failures);
		return 1;
	}
	printf("test_replay_cmdline: ok\n");
	return 0;
}
