/* mcpp's native client: the `mcpp` command a user types, in C.

   A `mcpp build`, `run` or `test` whose workspace has a warm server is handed to that server
   (engine/server/daemon.py) by this program, as engine/server/client.py would hand it: the same
   request, framed the same way (engine/server/protocol.py: a 4-byte big-endian length and a
   `marshal` dict; stdin, stdout and stderr passed as SCM_RIGHTS descriptors), the same signals
   forwarded, the same exit status. It saves each served command the interpreter's start and
   the client's imports (~9 ms of a 14 ms no-op; an edit-one build pays them before its compile
   starts). Everything else it does not handle itself: it runs the Python client, `mcpp-py` in
   its own directory, with the same arguments (`exec`, so the command's process is the same):
   no server up (which starts one), any other command, `--no-server`, `--manifest-path`, a home
   or working directory it would have to normalize, text that is not UTF-8, a socket directory
   that fails the checks of server/paths.py (`private_dir`, whose messages the Python client
   gives), a server that asks the client to restart it or refuses the request. Nothing is run
   twice: the Python client is run only while no request has been handed over, or after the
   server said it ran nothing.

   Which server: the one engine/server/paths.py names for the workspace root and the home, the
   same FNV-1a hash of both. Which version: where the Python client sends `protocol.identity()`
   (its interpreter, the installed engine), this one sends "native", NUL, and the interpreter
   named on the first line of its `mcpp-py` (the one pip wrote there): a server started from
   another installation has another interpreter path and refuses the request without stepping
   aside (this client then runs its Python client, whose own identity decides: a server of
   another version makes way for it; so a path this client reads wrongly costs a Python
   client's start, never a server's); a server of this one checks its installed sources before
   each build in any case (`Server._current`).

   Standard C and Linux only; built by setup.py when the package is built (where no C compiler
   is found, `mcpp` is the Python client itself). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static char **g_argv;

/* -- the Python client, for everything this one does not serve ---------------------------- */

/* The path of `mcpp-py` beside this executable (its real path: a link to `mcpp` elsewhere
   still finds its installation's), in `out`; 0 on success. Where /proc is not mounted (a
   sandbox), the real path of the command as it was run, when it was run by a path. */
static int python_client(char *out, size_t size) {
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0)
        self[n] = '\0';
    else if (strchr(g_argv[0], '/') == NULL || realpath(g_argv[0], self) == NULL)
        return -1;
    char *slash = strrchr(self, '/');
    if (slash == NULL)
        return -1;
    *slash = '\0';
    return snprintf(out, size, "%s/mcpp-py", self) < (int)size ? 0 : -1;
}

static volatile sig_atomic_t g_signal; /* a signal caught (`catch_signals`), not yet handled */

static void run_python_client(void) {
    if (g_signal) { /* before the hand-over: the command ends, as the Python client's would */
        fputs("error: interrupted\n", stderr);
        _exit(128 + g_signal);
    }
    char path[PATH_MAX];
    if (python_client(path, sizeof path) != 0) {
        fputs("error: mcpp: cannot find its own directory (neither /proc/self/exe nor a path it was run by)\n", stderr);
        _exit(127);
    }
    execv(path, g_argv);
    fprintf(stderr, "error: mcpp: cannot run %s: %s\n", path, strerror(errno));
    _exit(127);
}

/* -- a growable byte buffer and the marshal values a request holds ------------------------ */

typedef struct {
    unsigned char *p;
    size_t n, cap;
} Buf;

static void put(Buf *b, const void *data, size_t n) {
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n)
            cap *= 2;
        unsigned char *p = realloc(b->p, cap);
        if (p == NULL)
            run_python_client();
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, data, n);
    b->n += n;
}

static void put_byte(Buf *b, unsigned char c) { put(b, &c, 1); }

static void put_i32(Buf *b, int32_t v) {
    unsigned char le[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                           (unsigned char)(v >> 24)};
    put(b, le, 4);
}

/* A str: marshal's TYPE_UNICODE, its UTF-8 bytes (checked by the caller). */
static void put_str(Buf *b, const char *s, size_t n) {
    put_byte(b, 'u');
    put_i32(b, (int32_t)n);
    put(b, s, n);
}

static void put_cstr(Buf *b, const char *s) { put_str(b, s, strlen(s)); }

static void put_float(Buf *b, double v) {
    unsigned char raw[8];
    memcpy(raw, &v, 8); /* TYPE_BINARY_FLOAT: the IEEE double, little-endian as on x86 and arm64 */
    put_byte(b, 'g');
    put(b, raw, 8);
}

static void put_int(Buf *b, int32_t v) {
    put_byte(b, 'i');
    put_i32(b, v);
}

/* UTF-8 exactly as Python decodes it strictly (no overlong forms, no surrogates, at most
   U+10FFFF): where Python would keep other bytes as surrogate escapes, this client gives way. */
static int utf8(const unsigned char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t len;
        uint32_t cp;
        if (c >= 0xC2 && c <= 0xDF) {
            len = 2;
            cp = c & 0x1F;
        } else if (c >= 0xE0 && c <= 0xEF) {
            len = 3;
            cp = c & 0x0F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            len = 4;
            cp = c & 0x07;
        } else {
            return 0;
        }
        if (i + len > n)
            return 0;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return 0;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10FFFF ||
            (cp >= 0xD800 && cp <= 0xDFFF))
            return 0;
        i += len;
    }
    return 1;
}

static int text(const char *s) { return utf8((const unsigned char *)s, strlen(s)); }

/* -- which command, which workspace, which home (server/client.py, server/paths.py) -------- */

static int set_to_something(const char *name) {
    const char *v = getenv(name);
    return v != NULL && v[0] != '\0' && strcmp(v, "0") != 0;
}

/* The subcommand as engine/core/commands.py `subcommand` reads it; NULL for none. Sets
   `*manifest_path` when the global `--manifest-path` is given. */
static const char *subcommand(int argc, char **argv, int *manifest_path) {
    static const char *with_value[] = {"--color", "-j", "--jobs", "--manifest-path"};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0)
            return NULL;
        int takes_value = 0;
        for (size_t k = 0; k < sizeof with_value / sizeof *with_value; k++)
            takes_value |= strcmp(a, with_value[k]) == 0;
        if (takes_value) {
            *manifest_path |= strcmp(a, "--manifest-path") == 0;
            i++;
            continue;
        }
        if (strncmp(a, "--manifest-path=", 16) == 0)
            *manifest_path = 1;
        else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0 || strcmp(a, "--version") == 0)
            return NULL;
        else if (a[0] != '-')
            return a;
    }
    return NULL;
}

static int served(int argc, char **argv) {
    if (set_to_something("MCPP_NO_SERVER"))
        return 0;
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "--no-server") == 0)
            return 0;
    int manifest_path = 0;
    const char *command = subcommand(argc, argv, &manifest_path);
    if (command == NULL || manifest_path) /* a manifest path is made absolute by the Python client */
        return 0;
    return strcmp(command, "build") == 0 || strcmp(command, "run") == 0 || strcmp(command, "test") == 0;
}

/* An absolute path as os.path.abspath leaves it: no empty, `.` or `..` component, no trailing
   slash (but the root's). Any other spelling is the Python client's to normalize. */
static int normal_absolute(const char *p) {
    if (p[0] != '/')
        return 0;
    if (p[1] == '\0')
        return 1;
    for (const char *c = p; *c; c++) {
        if (*c != '/')
            continue;
        const char *next = c + 1;
        if (*next == '\0' || *next == '/')
            return 0;
        if (next[0] == '.' && (next[1] == '/' || next[1] == '\0'))
            return 0;
        if (next[0] == '.' && next[1] == '.' && (next[2] == '/' || next[2] == '\0'))
            return 0;
    }
    return 1;
}

static int is_file(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Whether a line of the manifest, stripped, starts with `[workspace` (paths.py `_declares_workspace`). */
static int declares_workspace(const char *manifest) {
    FILE *f = fopen(manifest, "rb");
    if (f == NULL)
        return 0;
    char line[4096];
    int found = 0;
    while (!found && fgets(line, sizeof line, f) != NULL) {
        const char *s = line;
        while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n' || *s == '\v' || *s == '\f')
            s++;
        found = strncmp(s, "[workspace", 10) == 0;
        /* a line longer than the buffer: its rest is read as lines of their own, as if broken
           there; only a line that begins a table matters, and one cannot begin mid-line */
    }
    fclose(f);
    return found;
}

/* The workspace root (paths.py `workspace_root`) above `start`, in `root`; 0 when found. */
static int workspace_root(const char *start, char *root, size_t size) {
    char dir[PATH_MAX], candidate[PATH_MAX + 16];
    int found = 0;
    if (snprintf(dir, sizeof dir, "%s", start) >= (int)sizeof dir)
        return -1;
    for (;;) {
        snprintf(candidate, sizeof candidate, "%s%smcpp.toml", dir, strcmp(dir, "/") == 0 ? "" : "/");
        if (is_file(candidate) && (!found || declares_workspace(candidate))) {
            if (snprintf(root, size, "%s", dir) >= (int)size)
                return -1;
            found = 1;
        }
        if (strcmp(dir, "/") == 0)
            break;
        char *slash = strrchr(dir, '/');
        if (slash == dir)
            dir[1] = '\0';
        else
            *slash = '\0';
    }
    return found ? 0 : -1;
}

/* `$MCPP_HOME`, else `$HOME/.mcpp` (engine/core/mcpp_home.py), as spelled: 0 when normal. */
static int home_dir(char *home, size_t size) {
    const char *value = getenv("MCPP_HOME");
    int n;
    if (value != NULL && value[0] != '\0') {
        n = snprintf(home, size, "%s", value);
    } else {
        const char *h = getenv("HOME");
        if (h == NULL || h[0] == '\0')
            return -1;
        n = snprintf(home, size, "%s/.mcpp", h);
    }
    return n < (int)size && normal_absolute(home) ? 0 : -1;
}

/* The server's name: the 64-bit FNV-1a hash of "home\0root" (paths.py `server_id`). */
static void server_id(const char *home, const char *root, char out[17]) {
    uint64_t h = 0xCBF29CE484222325ULL;
    const char *parts[2] = {home, root};
    for (int k = 0; k < 2; k++) {
        for (const unsigned char *c = (const unsigned char *)parts[k]; *c; c++)
            h = (h ^ *c) * 0x00000100000001B3ULL;
        if (k == 0)
            h = (h ^ 0) * 0x00000100000001B3ULL;
    }
    snprintf(out, 17, "%016llx", (unsigned long long)h);
}

/* The socket directory, if it passes paths.py `private_dir` (without making it). */
static int socket_dir(char *dir, size_t size) {
    const char *runtime = getenv("XDG_RUNTIME_DIR");
    int n;
    if (runtime != NULL && runtime[0] == '/')
        n = snprintf(dir, size, "%s%smcpp", runtime, runtime[strlen(runtime) - 1] == '/' ? "" : "/");
    else
        n = snprintf(dir, size, "/tmp/mcpp-%u", (unsigned)getuid());
    if (n >= (int)size)
        return -1;
    struct stat st, parent;
    uid_t uid = getuid();
    if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != uid || (st.st_mode & 077))
        return -1;
    char up[PATH_MAX];
    snprintf(up, sizeof up, "%s", dir);
    char *slash = strrchr(up, '/');
    if (slash == up)
        up[1] = '\0';
    else if (slash != NULL)
        *slash = '\0';
    if (stat(up, &parent) != 0)
        return -1;
    if ((parent.st_uid != uid && parent.st_uid != 0) || ((parent.st_mode & 022) && !(parent.st_mode & S_ISVTX)))
        return -1;
    return 0;
}

static int connect_server(const char *ident) {
    char dir[PATH_MAX];
    if (socket_dir(dir, sizeof dir) != 0)
        return -1;
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    if (snprintf(addr.sun_path, sizeof addr.sun_path, "%s/%s.sock", dir, ident) >= (int)sizeof addr.sun_path)
        return -1;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct ucred cred;
    socklen_t len = sizeof cred;
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0 ||
        getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.uid != getuid()) {
        close(fd); /* no server, or another user's process: the Python client says which */
        return -1;
    }
    return fd;
}

/* The interpreter the Python client runs under: its `#!` line, or the `exec` line pip writes
   under `#!/bin/sh` when the path is too long for one (tests/working_tree.py reads it so). */
static int interpreter(char *out, size_t size) {
    char path[PATH_MAX], head[1024];
    if (python_client(path, sizeof path) != 0)
        return -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, head, sizeof head - 1);
    close(fd);
    if (n < 3 || head[0] != '#' || head[1] != '!')
        return -1;
    head[n] = '\0';
    char *line = head + 2, *end = strchr(line, '\n');
    if (end == NULL)
        return -1;
    *end = '\0';
    if (strcmp(line, "/bin/sh") == 0) {
        line = end + 1;
        if (strncmp(line, "'''exec' ", 9) != 0)
            return -1;
        line += 9;
    }
    while (*line == ' ')
        line++;
    size_t len;
    if (*line == '"' || *line == '\'') { /* a path with spaces, quoted by pip under `#!/bin/sh` */
        char *close = strchr(line + 1, *line);
        if (close == NULL)
            return -1;
        line++;
        len = (size_t)(close - line);
    } else {
        len = strcspn(line, " \t\r\n");
    }
    if (len == 0 || len >= size || memchr(line, '\\', len) != NULL) /* an escape: not ours to undo */
        return -1;
    memcpy(out, line, len);
    out[len] = '\0';
    return 0;
}

/* -- the locale: Python reads the environment in the locale's encoding --------------------- */

static int utf8_locale(void) {
    const char *names[] = {"LC_ALL", "LC_CTYPE", "LANG"};
    for (int k = 0; k < 3; k++) {
        const char *v = getenv(names[k]);
        if (v == NULL || v[0] == '\0')
            continue;
        if (strcmp(v, "C") == 0 || strcmp(v, "POSIX") == 0)
            return 1; /* Python coerces the C locale to UTF-8 */
        const char *dot = strchr(v, '.');
        return dot != NULL && (strncasecmp(dot + 1, "utf-8", 5) == 0 || strncasecmp(dot + 1, "utf8", 4) == 0);
    }
    return 1;
}

/* -- the request ----------------------------------------------------------------------------- */

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The environment as Python's `os.environ` has it: entries with a `=`, the first of a name kept. */
static int put_environment(Buf *b) {
    put_byte(b, '{');
    for (char **e = environ; *e; e++) {
        const char *eq = strchr(*e, '=');
        if (eq == NULL || eq == *e)
            continue;
        size_t klen = (size_t)(eq - *e);
        int seen = 0;
        for (char **f = environ; f < e && !seen; f++)
            seen = strncmp(*f, *e, klen + 1) == 0;
        if (seen)
            continue;
        if (!text(*e))
            return -1;
        put_str(b, *e, klen);
        put_cstr(b, eq + 1);
    }
    put_byte(b, '0');
    return 0;
}

static int build_request(Buf *b, int argc, char **argv, const char *root, const char *home,
                         const char *cwd, const char *python, double began) {
    Buf body = {0};
    put_byte(&body, '{');
    put_cstr(&body, "op");
    put_cstr(&body, "build");
    char identity[PATH_MAX + 8];
    int n = snprintf(identity, sizeof identity, "native%c%s", '\0', python);
    put_cstr(&body, "identity");
    put_str(&body, identity, (size_t)n);
    put_cstr(&body, "root");
    put_cstr(&body, root);
    put_cstr(&body, "home");
    put_cstr(&body, home);
    put_cstr(&body, "argv");
    put_byte(&body, '[');
    put_i32(&body, argc - 1);
    for (int i = 1; i < argc; i++) {
        if (!text(argv[i]))
            return -1;
        put_cstr(&body, argv[i]);
    }
    put_cstr(&body, "cwd");
    put_cstr(&body, cwd);
    put_cstr(&body, "env");
    if (put_environment(&body) != 0)
        return -1;
    mode_t mask = umask(022);
    umask(mask);
    put_cstr(&body, "umask");
    put_int(&body, (int32_t)mask);
    put_cstr(&body, "started");
    put_float(&body, now());
    put_cstr(&body, "began");
    put_float(&body, began);
    put_byte(&body, '0');
    unsigned char be[4] = {(unsigned char)(body.n >> 24), (unsigned char)(body.n >> 16),
                           (unsigned char)(body.n >> 8), (unsigned char)body.n};
    put(b, be, 4);
    put(b, body.p, body.n);
    free(body.p);
    return 0;
}

/* The first frame with descriptors 0, 1 and 2, the rest after it; 0 when all of it went. */
static int send_request(int fd, const Buf *b) {
    int fds[3] = {0, 1, 2};
    char control[CMSG_SPACE(sizeof fds)];
    memset(control, 0, sizeof control);
    struct iovec iov = {.iov_base = b->p, .iov_len = b->n};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control,
                         .msg_controllen = sizeof control};
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof fds);
    memcpy(CMSG_DATA(c), fds, sizeof fds);
    ssize_t sent;
    do
        sent = sendmsg(fd, &msg, MSG_NOSIGNAL);
    while (sent < 0 && errno == EINTR);
    if (sent < 0)
        return -1;
    size_t done = (size_t)sent;
    while (done < b->n) {
        ssize_t k = send(fd, b->p + done, b->n - done, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        done += (size_t)k;
    }
    return 0;
}

/* -- signals: before the hand-over they end the client, after it they are forwarded ------- */

static void on_signal(int signum) { g_signal = signum; }

static void catch_signals(void) {
    int signals[3] = {SIGINT, SIGTERM, SIGHUP};
    for (int k = 0; k < 3; k++) {
        struct sigaction old, sa = {.sa_handler = on_signal}; /* no SA_RESTART: a wait sees it */
        sigemptyset(&sa.sa_mask);
        if (sigaction(signals[k], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
            sigaction(signals[k], &sa, NULL);
    }
}

static void forward(int fd, int signum) {
    const char *name = signum == SIGINT ? "INT" : signum == SIGTERM ? "TERM" : "HUP";
    Buf body = {0}, frame = {0};
    put_byte(&body, '{');
    put_cstr(&body, "signal");
    put_cstr(&body, name);
    put_byte(&body, '0');
    unsigned char be[4] = {0, 0, 0, (unsigned char)body.n};
    put(&frame, be, 4);
    put(&frame, body.p, body.n);
    (void)send(fd, frame.p, frame.n, MSG_NOSIGNAL | MSG_DONTWAIT);
    free(body.p);
    free(frame.p);
}

/* `n` bytes into `out`, forwarding the signals that come meanwhile; 0 when all came. */
static int receive(int fd, unsigned char *out, size_t n, int *received) {
    size_t got = 0;
    while (got < n) {
        ssize_t k = recv(fd, out + got, n - got, 0);
        if (k < 0 && errno == EINTR) {
            if (g_signal) {
                *received = g_signal;
                g_signal = 0;
                forward(fd, *received);
            }
            continue;
        }
        if (k <= 0)
            return -1;
        got += (size_t)k;
    }
    return 0;
}

/* -- the reply: a marshal dict of one key (daemon.py: exit, crashed, restart, refused) ------ */

typedef struct {
    const unsigned char *p, *end;
} Reader;

static int read_i32(Reader *r, int32_t *v) {
    if (r->end - r->p < 4)
        return -1;
    *v = (int32_t)((uint32_t)r->p[0] | (uint32_t)r->p[1] << 8 | (uint32_t)r->p[2] << 16 | (uint32_t)r->p[3] << 24);
    r->p += 4;
    return 0;
}

/* The first key of the reply and, where it is an int, its value: `*key` points into the frame. */
static int first_entry(Reader *r, const char **key, size_t *key_len, int *has_int, int32_t *value) {
    if (r->p >= r->end || (*r->p & 0x7F) != '{')
        return -1;
    r->p++;
    if (r->p >= r->end)
        return -1;
    unsigned char t = *r->p++ & 0x7F; /* FLAG_REF (0x80) only says the object may be referred to */
    int32_t len;
    if (t == 'z' || t == 'Z') {
        if (r->p >= r->end)
            return -1;
        len = *r->p++;
    } else if (t == 'a' || t == 'A' || t == 'u' || t == 't') {
        if (read_i32(r, &len) != 0 || len < 0)
            return -1;
    } else {
        return -1;
    }
    if (r->end - r->p < len)
        return -1;
    *key = (const char *)r->p;
    *key_len = (size_t)len;
    r->p += len;
    *has_int = r->p < r->end && (*r->p & 0x7F) == 'i';
    if (*has_int) {
        r->p++;
        return read_i32(r, value);
    }
    return 0;
}

static void lost(const char *what, const char *home, const char *ident, int code) {
    if (what == NULL)
        fprintf(stderr, "error: the mcpp server stopped before the command finished (see %s/server/%s.log); ",
                home, ident);
    else
        fprintf(stderr, "error: %s; ", what);
    fputs("it was not run again (run the command again, or with --no-server to run it in this process)\n", stderr);
    _exit(code);
}

int main(int argc, char **argv) {
    g_argv = argv;
    double began = now();
    if (!served(argc, argv) || !utf8_locale())
        run_python_client();
    char cwd[PATH_MAX], root[PATH_MAX], home[PATH_MAX], python[PATH_MAX], ident[17];
    if (getcwd(cwd, sizeof cwd) == NULL || !normal_absolute(cwd) || !text(cwd) ||
        workspace_root(cwd, root, sizeof root) != 0 || home_dir(home, sizeof home) != 0 || !text(home) ||
        interpreter(python, sizeof python) != 0 || !text(python))
        run_python_client();
    server_id(home, root, ident);
    catch_signals();
    int fd = connect_server(ident);
    if (fd < 0)
        run_python_client(); /* which starts a server, or says why none may run */
    Buf request = {0};
    if (build_request(&request, argc, argv, root, home, cwd, python, began) != 0)
        run_python_client();
    if (g_signal) {
        fputs("error: interrupted\n", stderr);
        _exit(128 + g_signal);
    }
    if (send_request(fd, &request) != 0) {
        close(fd); /* not handed over: a server takes no partial request */
        run_python_client();
    }
    int received = 0;
    unsigned char head[4];
    if (receive(fd, head, 4, &received) != 0) {
        if (received)
            _exit(128 + received);
        lost(NULL, home, ident, 1);
    }
    uint32_t len = (uint32_t)head[0] << 24 | (uint32_t)head[1] << 16 | (uint32_t)head[2] << 8 | head[3];
    unsigned char *body = len <= (1u << 20) ? malloc(len ? len : 1) : NULL;
    if (body == NULL || receive(fd, body, len, &received) != 0) {
        if (received)
            _exit(128 + received);
        lost("the mcpp server answered a message too large or cut short", home, ident, 1);
    }
    close(fd);
    Reader r = {body, body + len};
    const char *key = NULL;
    size_t key_len = 0;
    int has_int = 0;
    int32_t value = 0;
    if (first_entry(&r, &key, &key_len, &has_int, &value) == 0) {
#define IS(name) (key_len == sizeof name - 1 && memcmp(key, name, key_len) == 0)
        if (IS("exit") && has_int)
            _exit(value & 0xFF);
        if (received)
            _exit(128 + received);
        if (IS("restart") || IS("refused")) /* nothing ran: the Python client starts ours, or builds */
            run_python_client();
        if (IS("crashed") && has_int) {
            char what[96];
            snprintf(what, sizeof what, "the mcpp server's build process died (signal %d)", (int)value);
            lost(what, home, ident, 128 + value);
        }
#undef IS
    }
    if (received)
        _exit(128 + received);
    lost("the mcpp server answered a message this client does not know", home, ident, 1);
    return 1;
}
