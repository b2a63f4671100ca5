/*
 * clockshift: an LD_PRELOAD library that moves a process's wall clock (CLOCK_REALTIME,
 * gettimeofday, time) by an offset read from a file, so the clock-jump fault can set one
 * server's clock ahead while the test runs. libfaketime would be the usual tool, but under
 * this redis-server it recurses into clock_gettime during its own start-up and the server
 * never comes up; this one never allocates or looks symbols up: it asks the kernel directly.
 *
 * CLOCKSHIFT_FILE names a file holding the offset in whole seconds ("10", "-5"); it is read
 * again at most every 50 ms. The monotonic clocks are left alone (a jump of the wall clock
 * is what an NTP step or an operator does).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static long long offset_s;
static long long next_read_ns;

static long raw_clock(clockid_t id, struct timespec *ts) { return syscall(SYS_clock_gettime, id, ts); }

static long long current_offset(void) {
    struct timespec now;
    raw_clock(CLOCK_MONOTONIC, &now);
    long long now_ns = (long long)now.tv_sec * 1000000000LL + now.tv_nsec;
    if (now_ns < next_read_ns) return offset_s;
    next_read_ns = now_ns + 50000000LL;
    const char *path = getenv("CLOCKSHIFT_FILE");
    if (path == NULL) return offset_s;
    int fd = (int)syscall(SYS_open, path, O_RDONLY);
    if (fd < 0) return offset_s;
    char buf[32];
    long n = syscall(SYS_read, fd, buf, sizeof buf - 1);
    syscall(SYS_close, fd);
    if (n <= 0) return offset_s;
    buf[n] = 0;
    long long v = 0, sign = 1;
    int i = 0;
    while (buf[i] == ' ' || buf[i] == '+') i++;
    if (buf[i] == '-') { sign = -1; i++; }
    for (; buf[i] >= '0' && buf[i] <= '9'; i++) v = v * 10 + (buf[i] - '0');
    offset_s = sign * v;
    return offset_s;
}

int clock_gettime(clockid_t id, struct timespec *ts) {
    long r = raw_clock(id, ts);
    if (r == 0 && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE)) ts->tv_sec += current_offset();
    return (int)r;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
    struct timespec ts;
    (void)tz;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0) return -1;
    tv->tv_sec = ts.tv_sec;
    tv->tv_usec = ts.tv_nsec / 1000;
    return 0;
}

time_t time(time_t *out) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (out != NULL) *out = ts.tv_sec;
    return ts.tv_sec;
}
