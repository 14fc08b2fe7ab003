// NS concurrent MCP-over-HTTP sessions x CALLS calls with a C epoll client, one kept-alive connection each: every
// session starts a 6-disc Hanoi puzzle, then alternates hanoi_get_state and hanoi_execute_move (one of four moves
// drawn at random, so some are refused as illegal). KIND peer speaks the FastMCP puzzle server's tool names instead.
// usage: cload PORT PATH KIND(ludus|peer) NS CALLS
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <errno.h>
#include <time.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/epoll.h>

typedef struct { int fd, step, k; char sid[128], pv[32], env[80]; char *buf; int len, cap; int sent; char req[4096]; int reqlen; double t0; } C;
static double now() { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static int port, NS, CALLS, ludus; static const char *path;
static double *lat; static int nlat, errors, done; static double first_call = 0, last_done = 0;
static const int moves[4][3] = {{1,0,2},{1,0,1},{2,0,1},{1,2,1}};
static unsigned rnd = 12345;
static void build(C *c) {
  char body[1024]; int id = 3 + c->k;
  if (c->step == 0) snprintf(body, sizeof body, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"c%d\",\"version\":\"1\"}}}", c->fd);
  else if (c->step == 1) snprintf(body, sizeof body, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
  else if (c->step == 2) snprintf(body, sizeof body, ludus ? "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"hanoi_init_simulator\",\"arguments\":{\"n\":6}}}"
                                                           : "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"init_simulator\",\"arguments\":{\"simulator_type\":\"TowerOfHanoi\",\"N\":6}}}");
  else {
    rnd = rnd * 1103515245 + 12345; const int *m = moves[(rnd >> 16) & 3];
    if (c->k % 2 == 0) snprintf(body, sizeof body, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":\"%s\",\"arguments\":{\"env_id\":\"%s\"}}}", id, ludus ? "hanoi_get_state" : "get_state", c->env);
    else if (ludus) snprintf(body, sizeof body, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":\"hanoi_execute_move\",\"arguments\":{\"env_id\":\"%s\",\"move\":[%d,%d,%d]}}}", id, c->env, m[0], m[1], m[2]);
    else snprintf(body, sizeof body, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":\"execute_moves\",\"arguments\":{\"env_id\":\"%s\",\"moves\":[[%d,%d,%d]]}}}", id, c->env, m[0], m[1], m[2]);
  }
  int bl = strlen(body);
  c->reqlen = snprintf(c->req, sizeof c->req, "POST %s HTTP/1.1\r\nhost: 127.0.0.1:%d\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: %d\r\n%s%s%s%s%s\r\n%s",
    path, port, bl, c->sid[0] ? "mcp-session-id: " : "", c->sid, c->sid[0] ? "\r\nmcp-protocol-version: " : "", c->sid[0] ? c->pv : "", c->sid[0] ? "\r\n" : "", body);
  c->sent = 0; c->len = 0; c->t0 = now(); if (c->step >= 3 && first_call == 0) first_call = c->t0;
}
// returns length of a complete response in buf, or 0
static int complete(C *c, int *hl) {
  char *e = memmem(c->buf, c->len, "\r\n\r\n", 4); if (!e) return 0;
  *hl = e + 4 - c->buf; c->buf[*hl - 1] = 0;
  char *cl = strcasestr(c->buf, "content-length:"); char *ch = strcasestr(c->buf, "transfer-encoding: chunked");
  c->buf[*hl - 1] = '\n';
  if (cl && cl < e) { int n = atoi(cl + 15); return c->len >= *hl + n ? *hl + n : 0; }
  if (ch && ch < e) {
    int p = *hl;
    for (;;) {
      char *le = memmem(c->buf + p, c->len - p, "\r\n", 2); if (!le) return 0;
      int n = (int)strtol(c->buf + p, 0, 16); int q = le + 2 - c->buf;
      if (n == 0) return c->len >= q + 2 ? q + 2 : 0;
      if (c->len < q + n + 2) return 0;
      p = q + n + 2;
    }
  }
  return *hl;
}
static void grab(const char *s, int sl, const char *key, char *out, int outsz) {
  char *p = memmem(s, sl, key, strlen(key)); if (!p) { out[0] = 0; return; }
  p += strlen(key); while (*p == '\\' || *p == '"' || *p == ':' || *p == ' ') p++;
  int i = 0; while (i < outsz - 1 && (p[i] == '-' || p[i] == '.' || (p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'z') || (p[i] >= 'A' && p[i] <= 'Z'))) { out[i] = p[i]; i++; }
  out[i] = 0;
}
int main(int argc, char **argv) {
  port = atoi(argv[1]); path = argv[2]; ludus = !strcmp(argv[3], "ludus"); NS = atoi(argv[4]); CALLS = atoi(argv[5]);
  lat = malloc(sizeof(double) * NS * CALLS);
  int ep = epoll_create1(0); C *cs = calloc(NS, sizeof(C));
  double T0 = now();
  for (int i = 0; i < NS; i++) {
    C *c = &cs[i]; c->fd = socket(AF_INET, SOCK_STREAM, 0); int one = 1; setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct sockaddr_in a = {0}; a.sin_family = AF_INET; a.sin_port = htons(port); a.sin_addr.s_addr = htonl(0x7f000001);
    if (connect(c->fd, (void *)&a, sizeof a)) { perror("connect"); return 1; }
    fcntl(c->fd, F_SETFL, O_NONBLOCK); c->cap = 1 << 16; c->buf = malloc(c->cap);
    build(c); struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.ptr = c}; epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev);
  }
  struct epoll_event evs[256];
  while (done < NS) {
    int n = epoll_wait(ep, evs, 256, 60000); if (n <= 0) { fprintf(stderr, "timeout\n"); break; }
    for (int i = 0; i < n; i++) {
      C *c = evs[i].data.ptr;
      if (c->sent < c->reqlen) { int w = write(c->fd, c->req + c->sent, c->reqlen - c->sent); if (w > 0) c->sent += w; if (c->sent == c->reqlen) { struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c}; epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev); } }
      if (!(evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))) continue;
      for (;;) {
        if (c->cap - c->len < 4096) { c->cap *= 2; c->buf = realloc(c->buf, c->cap); }
        int r = read(c->fd, c->buf + c->len, c->cap - c->len - 1);
        if (r > 0) { c->len += r; continue; }
        if (r == 0) { errors++; done++; epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, 0); close(c->fd); c->step = -1; }
        break;
      }
      if (c->step < 0) continue;
      int hl, tot = complete(c, &hl); if (!tot) continue;
      c->buf[c->len] = 0;
      int status = atoi(c->buf + 9);
      if (status >= 300) { errors++; if (errors < 4) fprintf(stderr, "status %d step %d: %.200s\n", status, c->step, c->buf); }
      if (c->step == 0) { grab(c->buf, hl, "mcp-session-id", c->sid, sizeof c->sid); grab(c->buf + hl, c->len - hl, "protocolVersion", c->pv, sizeof c->pv); }
      else if (c->step == 2) { grab(c->buf + hl, c->len - hl, "env_id", c->env, sizeof c->env); if (!c->env[0]) { errors++; fprintf(stderr, "no env: %.300s\n", c->buf + hl); } }
      else if (c->step >= 3) { last_done = now(); lat[nlat++] = last_done - c->t0; if (strstr(c->buf + hl, "\"error\":{")) errors++; c->k++; }
      if (c->step < 3) c->step++;
      if (c->step == 3 && c->k >= CALLS) { done++; epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, 0); close(c->fd); continue; }
      build(c);
      int w = write(c->fd, c->req, c->reqlen); if (w > 0) c->sent = w;
      if (c->sent < c->reqlen) { struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.ptr = c}; epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev); }
    }
  }
  double dt = now() - T0;
  int cmp(const void *a, const void *b) { double x = *(double *)a, y = *(double *)b; return x < y ? -1 : x > y; }
  qsort(lat, nlat, sizeof(double), cmp);
  printf("%s: %d calls in %.3fs (%.0f/s incl. setup; %.0f/s from first call to last answer), errors %d, p50 %.2f ms p99 %.2f ms\n", argv[3], nlat, dt, nlat / dt, nlat / (last_done - first_call), errors, nlat ? lat[nlat / 2] * 1e3 : 0, nlat ? lat[(int)(nlat * .99)] * 1e3 : 0);
  return 0;
}
