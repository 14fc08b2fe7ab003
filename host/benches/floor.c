// The HTTP floor a server process can reach: one thread, epoll, kept-alive
// connections; every request (headers, then the body its Content-Length
// gives) is answered with the same bytes, read from the file named on the
// command line. `LUDUS_BENCH=http` compiles it with `cc -O2` and runs it as
// a process of its own, as Ludus is. Prints its port on stdout.
//
// With a second argument N, it also does what Ludus's connection threads
// do by default (`limits.busy_poll_us`): after answering, it looks for the
// next request without sleeping for N microseconds, yielding its CPU
// between looks, before it sleeps in epoll_wait.
//
// With a third argument W, it spends W nanoseconds on each request before
// answering (a busy loop on the clock): a server with work of its own to
// do. The benchmark uses it to show what a CPU that went idle while the
// client waited costs once a server's work outlasts the client's way into
// idle (docs/benchmarks.md, "Reading").
#define _GNU_SOURCE
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sched.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

typedef struct { int fd, len; char buf[65536]; } Conn;

static char answer[65536];

static long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

// Keeps the CPU busy for `ns` nanoseconds, as a server's own work would.
static void work(long ns) {
    if (ns <= 0) return;
    long until = now_ns() + ns;
    while (now_ns() < until) {}
}
static int answer_len;

// The length of the first whole request in c->buf, or 0.
static int whole_request(Conn *c) {
    char *end = memmem(c->buf, c->len, "\r\n\r\n", 4);
    if (!end) return 0;
    int head = end + 4 - c->buf, body = 0;
    for (char *p = c->buf; p < end; p = strstr(p, "\r\n") + 2)
        if (strncasecmp(p, "content-length:", 15) == 0) body = atoi(p + 15);
    return c->len >= head + body ? head + body : 0;
}

int main(int argc, char **argv) {
    FILE *f = fopen(argv[1], "rb");
    char body[60000];
    size_t n = fread(body, 1, sizeof body, f);
    answer_len = snprintf(answer, sizeof answer,
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %zu\r\n\r\n", n);
    memcpy(answer + answer_len, body, n);
    answer_len += n;

    int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    if (bind(ls, (void *)&a, sizeof a) || listen(ls, 512)) return 1;
    getsockname(ls, (void *)&a, &al);
    printf("%d\n", ntohs(a.sin_port));
    fflush(stdout);
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    epoll_ctl(ep, EPOLL_CTL_ADD, ls, &ev);
    struct epoll_event events[64];
    long watch_ns = argc > 2 ? atol(argv[2]) * 1000 : 0, watch_until = 0;
    long work_ns = argc > 3 ? atol(argv[3]) : 0;
    for (;;) {
        int k = epoll_wait(ep, events, 64, now_ns() < watch_until ? 0 : -1);
        if (k == 0) {
            sched_yield();
            continue;
        }
        for (int i = 0; i < k; i++) {
            Conn *c = events[i].data.ptr;
            if (!c) {
                int fd = accept(ls, NULL, NULL);
                if (fd < 0) continue;
                setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                c = calloc(1, sizeof *c);
                c->fd = fd;
                struct epoll_event e = {.events = EPOLLIN, .data.ptr = c};
                epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e);
                continue;
            }
            ssize_t r = read(c->fd, c->buf + c->len, sizeof c->buf - c->len);
            if (r <= 0) { close(c->fd); free(c); continue; }
            c->len += r;
            int used;
            while ((used = whole_request(c)) > 0) {
                work(work_ns);
                if (write(c->fd, answer, answer_len) != answer_len) break;
                watch_until = now_ns() + watch_ns;
                memmove(c->buf, c->buf + used, c->len - used);
                c->len -= used;
            }
        }
    }
}
