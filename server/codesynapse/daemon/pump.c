/* codesynapse-pump: the native byte pump between a client's stdio and the workspace daemon's
 * socket, the same job as daemon/pump.py at about 1 MiB of resident memory instead of ~11.
 *
 * Built by scripts/setup.sh (cc -O2 -o .venv/bin/codesynapse-pump pump.c) when a C compiler is
 * there; daemon/proxy.py execs it when the binary exists and falls back to pump.py otherwise.
 *
 *   codesynapse-pump FD PID [ID METHOD]...
 *
 * FD: the socket past the handshake; PID: the daemon's pid as the message shows it; each ID is
 * the JSON text of a request id already sent and not answered, METHOD the JSON string of its
 * method. Frames are cut as lsp/rpc.py and pump.py cut them (a "Content-Length: N\r\n" line,
 * other header lines skipped, a blank line, N bytes) and copied unchanged. The id and method of
 * each client request are noted (and "exit" ends the client's side); the id of each daemon
 * response is dropped. When the daemon's side ends before the client said exit, every request
 * still waiting gets a RequestFailed error, the client gets window/showMessage (Error), and the
 * pump exits 1; after the client's exit (or EOF on stdin) it waits up to 10 s for the daemon to
 * finish answering and exits 0. Both directions run independently (poll, buffered), as the two
 * threads of pump.py do. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define HIGH_WATER (1u << 20) /* stop reading a side while 1 MiB waits to be written */

typedef struct { char *p; size_t n, cap; } buf;
typedef struct { char *id, *method; } req; /* JSON texts */

static req *pend;
static size_t npend, cappend;
static const char *daemon_pid = "None";

static void *xrealloc(void *p, size_t n) {
    p = realloc(p, n ? n : 1);
    if (!p) { fputs("codesynapse-pump: out of memory\n", stderr); _exit(1); }
    return p;
}

static void put(buf *b, const char *s, size_t n) {
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 4096;
        b->p = xrealloc(b->p, b->cap);
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
}

static void puts_(buf *b, const char *s) { put(b, s, strlen(s)); }

static void drop(buf *b, size_t n) {
    memmove(b->p, b->p + n, b->n - n);
    b->n -= n;
    if (!b->n && b->cap > HIGH_WATER) { free(b->p); *b = (buf){0}; } /* a big frame's memory goes back */
}

static char *copy(const char *s, size_t n) { char *d = xrealloc(NULL, n + 1); memcpy(d, s, n); d[n] = 0; return d; }

/* ---- frames: as pump.read_frame; returns the frame's length (0: need more), *body its start */
static int blank(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!strchr(" \t\n\r\v\f", s[i]) || !s[i]) return 0;
    return 1;
}

static size_t cut(const buf *b, size_t *body, size_t *blen) {
    size_t pos = 0, length = 0;
    for (;;) {
        char *nl = memchr(b->p + pos, '\n', b->n - pos);
        if (!nl) return 0;
        size_t end = (size_t)(nl - b->p) + 1, ln = end - pos;
        const char *line = b->p + pos;
        if (!length && ln > 18 && !memcmp(line, "Content-Length: ", 16) && line[ln - 2] == '\r') {
            size_t i = 16, v = 0;
            while (i < ln - 2 && line[i] >= '0' && line[i] <= '9') {
                v = v > ((size_t)-1 >> 4) ? (size_t)-1 >> 1 : v * 10 + (size_t)(line[i] - '0');
                i++;
            }
            if (i == ln - 2) length = v;
        }
        pos = end;
        if (length && blank(line, ln)) break;
    }
    if (b->n - pos < length) return 0;
    *body = pos;
    *blen = length;
    return pos + length;
}

/* ---- a validating JSON scanner, just enough to find a top-level object's "id" and "method"
 * (json.loads rejects what it rejects: then the message is not noted, as in pump.py) */
enum { T_BAD, T_STR, T_INT, T_BOOL, T_OTHER };
typedef struct { const char *s, *e; } sc;

static void ws(sc *c) { while (c->s < c->e && strchr(" \t\n\r", *c->s) && *c->s) c->s++; }

static int lit(sc *c, const char *w) {
    size_t n = strlen(w);
    if ((size_t)(c->e - c->s) < n || memcmp(c->s, w, n)) return 0;
    c->s += n;
    return 1;
}

static int hex4(const char *s) {
    for (int i = 0; i < 4; i++)
        if (!strchr("0123456789abcdefABCDEF", s[i]) || !s[i]) return 0;
    return 1;
}

static int str(sc *c) {
    c->s++;
    while (c->s < c->e) {
        unsigned char ch = (unsigned char)*c->s++;
        if (ch == '"') return T_STR;
        if (ch < 0x20) return T_BAD;
        if (ch == '\\') {
            if (c->s >= c->e) return T_BAD;
            char x = *c->s++;
            if (x == 'u') {
                if (c->e - c->s < 4 || !hex4(c->s)) return T_BAD;
                c->s += 4;
            } else if (!strchr("\"\\/bfnrt", x) || !x) return T_BAD;
        }
    }
    return T_BAD;
}

static int digits(sc *c) {
    const char *a = c->s;
    while (c->s < c->e && *c->s >= '0' && *c->s <= '9') c->s++;
    return c->s > a;
}

static int value(sc *c, int depth);

static int number(sc *c) {
    if (c->s < c->e && *c->s == '-') {
        c->s++;
        if (lit(c, "Infinity")) return T_OTHER;
    }
    if (c->s >= c->e) return T_BAD;
    if (*c->s == '0') c->s++;
    else if (!digits(c)) return T_BAD;
    int t = T_INT;
    if (c->s + 1 < c->e && *c->s == '.' && c->s[1] >= '0' && c->s[1] <= '9') { c->s++; digits(c); t = T_OTHER; }
    if (c->s < c->e && (*c->s == 'e' || *c->s == 'E')) {
        const char *back = c->s++;
        if (c->s < c->e && (*c->s == '+' || *c->s == '-')) c->s++;
        if (digits(c)) t = T_OTHER;
        else c->s = back; /* "1e" is 1 then extra data, as json.loads reads it */
    }
    return t;
}

/* object members: when top, the last "id" and "method" values (and whether "method" is a key) */
static const char *id_s, *id_e, *m_s, *m_e;
static int id_ty, m_ty, has_method;

static int object(sc *c, int depth, int top) {
    c->s++;
    ws(c);
    if (c->s < c->e && *c->s == '}') { c->s++; return T_OTHER; }
    for (;;) {
        ws(c);
        if (c->s >= c->e || *c->s != '"') return T_BAD;
        const char *k = c->s;
        if (str(c) != T_STR) return T_BAD;
        size_t kn = (size_t)(c->s - k);
        ws(c);
        if (c->s >= c->e || *c->s++ != ':') return T_BAD;
        ws(c);
        const char *v = c->s;
        int t = value(c, depth + 1);
        if (t == T_BAD) return T_BAD;
        if (top && kn == 4 && !memcmp(k, "\"id\"", 4)) { id_s = v; id_e = c->s; id_ty = t; }
        if (top && kn == 8 && !memcmp(k, "\"method\"", 8)) { m_s = v; m_e = c->s; m_ty = t; has_method = 1; }
        ws(c);
        if (c->s >= c->e) return T_BAD;
        if (*c->s == '}') { c->s++; return T_OTHER; }
        if (*c->s++ != ',') return T_BAD;
    }
}

static int value(sc *c, int depth) {
    if (depth > 900 || c->s >= c->e) return T_BAD; /* RecursionError in json.loads */
    switch (*c->s) {
    case '"': return str(c);
    case '{': return object(c, depth, 0);
    case '[':
        c->s++;
        ws(c);
        if (c->s < c->e && *c->s == ']') { c->s++; return T_OTHER; }
        for (;;) {
            ws(c);
            if (value(c, depth + 1) == T_BAD) return T_BAD;
            ws(c);
            if (c->s >= c->e) return T_BAD;
            if (*c->s == ']') { c->s++; return T_OTHER; }
            if (*c->s++ != ',') return T_BAD;
        }
    case 't': return lit(c, "true") ? T_BOOL : T_BAD;
    case 'f': return lit(c, "false") ? T_BOOL : T_BAD;
    case 'n': return lit(c, "null") ? T_OTHER : T_BAD;
    case 'N': return lit(c, "NaN") ? T_OTHER : T_BAD;
    case 'I': return lit(c, "Infinity") ? T_OTHER : T_BAD;
    default: return number(c);
    }
}

/* 1 when body is a JSON object (id_*, m_* set), 0 otherwise */
static int scan(const char *body, size_t n) {
    sc c = {body, body + n};
    id_s = m_s = NULL;
    id_ty = m_ty = T_BAD;
    has_method = 0;
    ws(&c);
    if (c.s >= c.e || *c.s != '{') return 0;
    if (object(&c, 0, 1) == T_BAD) return 0;
    ws(&c);
    return c.s == c.e;
}

static int is_id(int t) { return t == T_STR || t == T_INT || t == T_BOOL; } /* isinstance(x, (int, str)) */

static long find(const char *s, const char *e) {
    for (size_t i = 0; i < npend; i++)
        if (strlen(pend[i].id) == (size_t)(e - s) && !memcmp(pend[i].id, s, (size_t)(e - s))) return (long)i;
    return -1;
}

static void note(const char *id, size_t idn, const char *m, size_t mn) {
    long i = find(id, id + idn);
    if (i >= 0) { free(pend[i].method); pend[i].method = copy(m, mn); return; }
    if (npend == cappend) { cappend = cappend * 2 + 8; pend = xrealloc(pend, cappend * sizeof *pend); }
    pend[npend].id = copy(id, idn);
    pend[npend++].method = copy(m, mn);
}

/* client -> daemon: 1 when this was "exit" */
static int note_request(const char *body, size_t n) {
    if (!scan(body, n) || m_ty != T_STR) return 0;
    if (m_e - m_s == 6 && !memcmp(m_s, "\"exit\"", 6)) return 1;
    if (is_id(id_ty)) note(id_s, (size_t)(id_e - id_s), m_s, (size_t)(m_e - m_s));
    return 0;
}

static void note_reply(const char *body, size_t n) {
    if (!npend || !scan(body, n) || has_method || !is_id(id_ty)) return;
    long i = find(id_s, id_e);
    if (i < 0) return;
    free(pend[i].id);
    free(pend[i].method);
    memmove(pend + i, pend + i + 1, (npend - (size_t)i - 1) * sizeof *pend);
    npend--;
}

/* ---- output */
static int write_all(int fd, const char *p, size_t n) {
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && errno == EAGAIN) { struct pollfd q = {fd, POLLOUT, 0}; poll(&q, 1, 1000); continue; }
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static void send_frame(const char *body, size_t n) {
    char head[64];
    int h = snprintf(head, sizeof head, "Content-Length: %zu\r\n\r\n", n);
    buf b = {0};
    put(&b, head, (size_t)h);
    put(&b, body, n);
    write_all(1, b.p, b.n);
    free(b.p);
}

/* the first 80 characters of a JSON string's text (escapes and UTF-8 sequences kept whole) */
static size_t first80(const char *s, size_t n) {
    size_t i = 0, chars = 0;
    while (i < n && chars < 80) {
        if (s[i] == '\\') {
            size_t k = s[i + 1] == 'u' ? 6 : 2;
            if (k == 6 && i + 12 <= n && s[i + 6] == '\\' && s[i + 7] == 'u' && strchr("dD", s[i + 2]) &&
                strchr("89abAB", s[i + 3]) && strchr("dD", s[i + 8]) && strchr("cdefCDEF", s[i + 9]))
                k = 12; /* a surrogate pair is one character */
            i += k;
        } else {
            i++;
            while (i < n && ((unsigned char)s[i] & 0xC0) == 0x80) i++;
        }
        chars++;
    }
    return i;
}

static void daemon_died(buf *out) {
    fprintf(stderr, "codesynapse: the workspace daemon (pid %s) stopped while this client was connected\n",
            daemon_pid);
    if (out->n) write_all(1, out->p, out->n);
    buf b = {0};
    for (size_t i = 0; i < npend; i++) {
        const char *m = pend[i].method + 1;
        size_t mn = first80(m, strlen(m) - 1);
        b.n = 0;
        puts_(&b, "{\"jsonrpc\": \"2.0\", \"id\": ");
        put(&b, pend[i].id, strlen(pend[i].id));
        puts_(&b, ", \"error\": {\"code\": -32803, \"message\": \"");
        put(&b, m, mn);
        const char *tail = ": the CodeSynapse workspace daemon stopped before answering; restart the language server "
                           "to start a new one\"}}";
        puts_(&b, tail);
        send_frame(b.p, b.n);
    }
    char msg[1024];
    int n = snprintf(msg, sizeof msg,
        "{\"jsonrpc\": \"2.0\", \"method\": \"window/showMessage\", \"params\": {\"type\": 1, \"message\": "
        "\"CodeSynapse: the shared workspace daemon (pid %s) stopped unexpectedly. Restart the CodeSynapse "
        "language server (in VS Code: reload the window, or the command 'CodeSynapse: Restart' where "
        "the extension has it) to start a new daemon; the index and the durable memory committed so far "
        "are kept. The daemon's log is daemon.log in the data folder.\"}}", daemon_pid);
    send_frame(msg, (size_t)n);
    _exit(1);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static int valid_pid(const char *s) {
    if (!strcmp(s, "None")) return 1;
    if (!*s || strlen(s) > 20) return 0;
    for (; *s; s++)
        if (*s < '0' || *s > '9') return 0;
    return 1;
}

int main(int argc, char **argv) {
    if (argc < 3 || argc % 2 == 0 || !valid_pid(argv[2])) {
        fputs("usage: codesynapse-pump FD PID [ID METHOD]...\n", stderr);
        return 2;
    }
    int sock = atoi(argv[1]);
    daemon_pid = argv[2];
    for (int i = 3; i + 1 < argc; i += 2) {
        size_t ml = strlen(argv[i + 1]);
        if (ml < 2 || argv[i + 1][0] != '"' || argv[i + 1][ml - 1] != '"') continue;
        note(argv[i], strlen(argv[i]), argv[i + 1], ml);
    }
    signal(SIGPIPE, SIG_IGN);
    fcntl(sock, F_SETFL, fcntl(sock, F_GETFL) | O_NONBLOCK);

    buf up_in = {0}, up_out = {0}, down_in = {0}, down_out = {0};
    int stdin_open = 1, exiting = 0, shut = 0, sock_wr_ok = 1;
    double deadline = 0;
    char chunk[65536];

    for (;;) {
        struct pollfd q[3];
        int nq = 0, i_in = -1, i_sock, i_out = -1;
        if (stdin_open && !exiting && sock_wr_ok && up_out.n < HIGH_WATER) { q[nq] = (struct pollfd){0, POLLIN, 0}; i_in = nq++; }
        q[nq] = (struct pollfd){sock, 0, 0};
        if (down_out.n < HIGH_WATER) q[nq].events |= POLLIN;
        if (up_out.n && sock_wr_ok) q[nq].events |= POLLOUT;
        i_sock = nq++;
        if (down_out.n) { q[nq] = (struct pollfd){1, POLLOUT, 0}; i_out = nq++; }
        int timeout = -1;
        if (exiting) {
            double left = deadline - now();
            if (left <= 0) break; /* the daemon did not close within 10 s: done anyway */
            timeout = (int)(left * 1000) + 1;
        }
        if (poll(q, (nfds_t)nq, timeout) < 0) {
            if (errno == EINTR) continue;
            break;
        }
        /* client -> daemon */
        if (i_in >= 0 && q[i_in].revents) {
            ssize_t r = read(0, chunk, sizeof chunk);
            if (r < 0 && (errno == EINTR || errno == EAGAIN)) r = -2;
            if (r > 0) {
                put(&up_in, chunk, (size_t)r);
                size_t body, blen, len;
                while (!exiting && (len = cut(&up_in, &body, &blen))) {
                    if (note_request(up_in.p + body, blen)) exiting = 1;
                    put(&up_out, up_in.p, len);
                    drop(&up_in, len);
                }
            } else if (r != -2) {
                stdin_open = 0; /* EOF: a frame cut short is not sent, as in pump.py */
                exiting = 1;
            }
            if (exiting && !deadline) deadline = now() + 10.0;
        }
        if (up_out.n && sock_wr_ok && (q[i_sock].revents & (POLLOUT | POLLERR | POLLHUP))) {
            ssize_t w = send(sock, up_out.p, up_out.n, MSG_NOSIGNAL);
            if (w > 0) drop(&up_out, (size_t)w);
            else if (w < 0 && errno != EAGAIN && errno != EINTR) {
                sock_wr_ok = 0; /* the daemon's side is gone: its read side reports it */
                up_out.n = 0;
            }
        }
        if (exiting && !shut && !up_out.n) {
            shutdown(sock, SHUT_WR);
            shut = 1;
        }
        /* daemon -> client */
        if ((q[i_sock].events & POLLIN) && (q[i_sock].revents & (POLLIN | POLLERR | POLLHUP))) {
            ssize_t r = recv(sock, chunk, sizeof chunk, 0);
            if (r > 0) {
                put(&down_in, chunk, (size_t)r);
                size_t body, blen, len;
                while ((len = cut(&down_in, &body, &blen))) {
                    note_reply(down_in.p + body, blen);
                    put(&down_out, down_in.p, len);
                    drop(&down_in, len);
                }
            } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
                if (!exiting) daemon_died(&down_out);
                break; /* the daemon answered what was sent and closed */
            }
        }
        if (i_out >= 0 && q[i_out].revents) {
            size_t n = down_out.n < 4096 ? down_out.n : 4096; /* at most PIPE_BUF after POLLOUT: no block */
            ssize_t w = write(1, down_out.p, n);
            if (w > 0) drop(&down_out, (size_t)w);
            else if (w < 0 && errno != EAGAIN && errno != EINTR) {
                fputs("codesynapse: this client's output closed\n", stderr);
                _exit(1);
            }
        }
    }
    if (down_out.n) write_all(1, down_out.p, down_out.n);
    close(sock);
    return 0;
}
