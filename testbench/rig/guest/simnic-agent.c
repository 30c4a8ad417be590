/* simnic-agent: the rig's control channel inside a VM.
 *
 * Runs as a child of the rig's init on the VM's second serial port (ttyS1),
 * which QEMU connects to a UNIX socket in the rig's state directory. The host
 * side is `simnic-rig exec`.
 *
 * Protocol (all ASCII headers, one per line):
 *   host -> VM:  "SIMNIC-RUN <nonce> <timeout_ms> <len>\n" then <len> bytes of
 *                a /bin/sh command line.
 *   VM -> host:  the command's stdout and stderr, as they come, then
 *                "\036SIMNIC-END <nonce> <status>\n", where <status> is the
 *                exit code, "sig<N>" when a signal ended it, or "timeout"
 *                when the agent killed its process group after timeout_ms.
 * Lines that are not a SIMNIC-RUN header are ignored, so a host that
 * reconnects after noise resynchronises at the next header.
 *
 * The command runs in a session of its own (setsid) with stdin /dev/null;
 * on timeout the whole process group gets SIGKILL. Processes a command puts
 * in the background of its own accord keep running.
 *
 * Built statically on the host by `simnic-rig setup`.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

static int g_fd = -1;

static void write_all(const char *buf, size_t len) {
    while (len > 0) {
        ssize_t n = write(g_fd, buf, len);
        if (n < 0) {
            if (errno == EINTR) continue;
            return;
        }
        buf += n;
        len -= (size_t)n;
    }
}

/* Read one byte; returns -1 on EOF/error. */
static int read_byte(void) {
    unsigned char c;
    for (;;) {
        ssize_t n = read(g_fd, &c, 1);
        if (n == 1) return c;
        if (n < 0 && errno == EINTR) continue;
        if (n == 0) { usleep(100000); continue; } /* tty hang-up: wait for the host */
        return -1;
    }
}

static int read_line(char *buf, size_t cap) {
    size_t n = 0;
    for (;;) {
        int c = read_byte();
        if (c < 0) return -1;
        if (c == '\n') break;
        if (n + 1 < cap) buf[n++] = (char)c;
    }
    buf[n] = '\0';
    return (int)n;
}

static long long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void run(const char *nonce, long long timeout_ms, const char *cmd) {
    sigset_t chld, old;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, &old);

    pid_t pid = fork();
    if (pid == 0) {
        sigprocmask(SIG_SETMASK, &old, NULL);
        setsid();
        int in = open("/dev/null", O_RDONLY);
        if (in >= 0) { dup2(in, 0); if (in > 2) close(in); }
        dup2(g_fd, 1);
        dup2(g_fd, 2);
        if (g_fd > 2) close(g_fd);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    char status[32];
    if (pid < 0) {
        snprintf(status, sizeof status, "%d", 126);
    } else {
        long long deadline = now_ms() + timeout_ms;
        int st = 0, timed_out = 0;
        for (;;) {
            pid_t r = waitpid(pid, &st, WNOHANG);
            if (r == pid) break;
            long long left = deadline - now_ms();
            if (timeout_ms > 0 && left <= 0) {
                kill(-pid, SIGKILL);
                waitpid(pid, &st, 0);
                timed_out = 1;
                break;
            }
            if (left > 200 || timeout_ms <= 0) left = 200;
            struct timespec ts = { 0, (long)left * 1000000L };
            sigtimedwait(&chld, NULL, &ts);
        }
        /* The agent is a child subreaper: processes a command left in the
         * background come to it when they exit. Reap those that have. */
        while (waitpid(-1, NULL, WNOHANG) > 0) {}
        if (timed_out) snprintf(status, sizeof status, "timeout");
        else if (WIFEXITED(st)) snprintf(status, sizeof status, "%d", WEXITSTATUS(st));
        else if (WIFSIGNALED(st)) snprintf(status, sizeof status, "sig%d", WTERMSIG(st));
        else snprintf(status, sizeof status, "%d", 125);
    }
    sigprocmask(SIG_SETMASK, &old, NULL);
    char tail[160];
    int n = snprintf(tail, sizeof tail, "\036SIMNIC-END %s %s\n", nonce, status);
    write_all(tail, (size_t)n);
}

int main(int argc, char **argv) {
    const char *dev = argc > 1 ? argv[1] : "/dev/ttyS1";
    g_fd = open(dev, O_RDWR | O_NOCTTY);
    if (g_fd < 0) {
        perror(dev);
        return 1;
    }
    struct termios t;
    if (tcgetattr(g_fd, &t) == 0) {
        cfmakeraw(&t);
        cfsetispeed(&t, B115200);
        cfsetospeed(&t, B115200);
        t.c_cflag |= CLOCAL | CREAD;
        tcsetattr(g_fd, TCSANOW, &t);
    }
    signal(SIGPIPE, SIG_IGN);
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    const char hello[] = "\036SIMNIC-AGENT-READY\n";
    write_all(hello, sizeof hello - 1);

    char line[512];
    for (;;) {
        if (read_line(line, sizeof line) < 0) return 1;
        char nonce[64];
        long long timeout_ms = 0;
        long len = 0;
        if (sscanf(line, "SIMNIC-RUN %63s %lld %ld", nonce, &timeout_ms, &len) != 3) continue;
        if (len < 0 || len > (1 << 20)) continue;
        char *cmd = malloc((size_t)len + 1);
        if (!cmd) return 1;
        for (long i = 0; i < len; i++) {
            int c = read_byte();
            if (c < 0) return 1;
            cmd[i] = (char)c;
        }
        cmd[len] = '\0';
        run(nonce, timeout_ms, cmd);
        free(cmd);
    }
}
