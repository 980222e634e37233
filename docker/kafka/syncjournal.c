/*
 * libsyncjournal: what a power loss would leave of a JVM's files, recorded as it runs.
 *
 * Preloaded into a broker or ZooKeeper JVM (LD_PRELOAD), it wraps the libc calls that make
 * data durable or change what is durable, and appends one line per call to a journal file:
 *
 *   B <size> <path>     at start: a file already there, taken as durable at its size
 *   S <size> <path>     fsync/fdatasync of a regular file: its first <size> bytes are durable
 *   D 0 <path>          fsync of a directory: its entries (creations, renames) are durable
 *   T <length> <path>   ftruncate: nothing beyond <length> survives, synced or not
 *   R 0 <from>\t<to>    rename: what was durable under <from> is now under <to>
 *   U 0 <path>          unlink: nothing is durable under <path> any more
 *
 * Only paths under the directories named in KAFKA_CHAOS_SYNC_DIRS (colon-separated
 * prefixes) are recorded; the journal is KAFKA_CHAOS_SYNC_JOURNAL, which must lie outside
 * them. Without both variables the library only forwards calls. The size of a synced file
 * is taken *before* the real fsync, so bytes appended while it runs are not counted as
 * durable: the worst case, which is what the power-loss model wants
 * (docs/design/power-loss.md). A line is written with one write(2) to an O_APPEND
 * descriptor, so lines from concurrent threads do not interleave.
 *
 * The B lines are written when the library loads, so the process that journals should
 * be the only one writing the tracked directories: only an executable named
 * KAFKA_CHAOS_SYNC_EXE (default "java") journals, so a shell that execs the JVM does not,
 * and it removes the journal's variable, so the processes it starts only forward.
 *
 * Writes themselves are not wrapped: the journal needs to know only what was made
 * durable. Memory-mapped stores (Kafka's indexes) bypass libc and are not recorded.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

static int journal_fd = -1;
static char dirs[4096];
static int configured;

static int (*real_fsync)(int);
static int (*real_fdatasync)(int);
static int (*real_ftruncate)(int, off_t);
static int (*real_ftruncate64)(int, off64_t);
static int (*real_rename)(const char *, const char *);
static int (*real_renameat)(int, const char *, int, const char *);
static int (*real_renameat2)(int, const char *, int, const char *, unsigned int);
static int (*real_unlink)(const char *);
static int (*real_unlinkat)(int, const char *, int);

/* The next definition of each wrapped call; also run from the wrappers, since another
 * library's constructor may call one before this library's constructor has run. */
static void resolve(void) {
    if (real_unlinkat)
        return;
    real_fsync = dlsym(RTLD_NEXT, "fsync");
    real_fdatasync = dlsym(RTLD_NEXT, "fdatasync");
    real_ftruncate = dlsym(RTLD_NEXT, "ftruncate");
    real_ftruncate64 = dlsym(RTLD_NEXT, "ftruncate64");
    real_rename = dlsym(RTLD_NEXT, "rename");
    real_renameat = dlsym(RTLD_NEXT, "renameat");
    real_renameat2 = dlsym(RTLD_NEXT, "renameat2");
    real_unlink = dlsym(RTLD_NEXT, "unlink");
    real_unlinkat = dlsym(RTLD_NEXT, "unlinkat");
}

static void record(char kind, long long size, const char *path, const char *to);

static int baseline_file(const char *path, const struct stat *st, int type, struct FTW *ftw) {
    (void)ftw;
    if (type == FTW_F && S_ISREG(st->st_mode))
        record('B', (long long)st->st_size, path, NULL);
    return 0;
}

/* Every file already in a tracked directory, as it is now (nothing else is running). */
static void baseline(void) {
    char copy[sizeof dirs];
    snprintf(copy, sizeof copy, "%s", dirs);
    for (char *save = NULL, *dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save))
        nftw(dir, baseline_file, 16, FTW_PHYS);
}

__attribute__((constructor)) static void init(void) {
    resolve();
    const char *journal = getenv("KAFKA_CHAOS_SYNC_JOURNAL");
    const char *tracked = getenv("KAFKA_CHAOS_SYNC_DIRS");
    if (!journal || !*journal || !tracked || !*tracked || strlen(tracked) >= sizeof dirs)
        return;
    const char *wanted = getenv("KAFKA_CHAOS_SYNC_EXE");
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n < 0)
        return;
    exe[n] = '\0';
    const char *name = strrchr(exe, '/');
    if (strcmp(name ? name + 1 : exe, wanted && *wanted ? wanted : "java") != 0)
        return; /* a shell or tool on the way to the JVM: forward only */
    snprintf(dirs, sizeof dirs, "%s", tracked);
    journal_fd = open(journal, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    /* This process alone journals: a child it starts (a shell, a tool) only forwards. */
    unsetenv("KAFKA_CHAOS_SYNC_JOURNAL");
    configured = journal_fd >= 0;
    if (configured)
        baseline();
}

/* Whether path lies under one of the tracked directories (a prefix ending at a '/'). */
static int tracked(const char *path) {
    const char *p = dirs;
    while (*p) {
        const char *end = strchr(p, ':');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        while (n > 1 && p[n - 1] == '/')
            n--;
        if (n && strncmp(path, p, n) == 0 && (path[n] == '/' || path[n] == '\0'))
            return 1;
        if (!end)
            break;
        p = end + 1;
    }
    return 0;
}

static int fd_path(int fd, char *out, size_t size) {
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, out, size - 1);
    if (n < 0)
        return -1;
    out[n] = '\0';
    return 0;
}

/* An absolute path for (dirfd, path), or -1 when it cannot be known. */
static int at_path(int dirfd, const char *path, char *out, size_t size) {
    if (path[0] == '/') {
        snprintf(out, size, "%s", path);
        return 0;
    }
    char base[PATH_MAX];
    if (dirfd == AT_FDCWD) {
        if (!getcwd(base, sizeof base))
            return -1;
    } else if (fd_path(dirfd, base, sizeof base) < 0) {
        return -1;
    }
    if ((size_t)snprintf(out, size, "%s/%s", base, path) >= size)
        return -1;
    return 0;
}

static void record(char kind, long long size, const char *path, const char *to) {
    char line[2 * PATH_MAX + 64];
    int n = to ? snprintf(line, sizeof line, "%c %lld %s\t%s\n", kind, size, path, to)
               : snprintf(line, sizeof line, "%c %lld %s\n", kind, size, path);
    if (n > 0 && (size_t)n < sizeof line) {
        int saved = errno;
        ssize_t ignored = write(journal_fd, line, (size_t)n);
        (void)ignored;
        errno = saved;
    }
}

/* Before a sync: the file's path and size now, if it is one we track. */
static int before_sync(int fd, char *path, size_t size, struct stat *st) {
    if (!configured || fd_path(fd, path, size) < 0 || !tracked(path))
        return 0;
    return fstat(fd, st) == 0;
}

static void after_sync(int ok, const char *path, const struct stat *st) {
    if (ok)
        record(S_ISDIR(st->st_mode) ? 'D' : 'S', S_ISDIR(st->st_mode) ? 0 : (long long)st->st_size,
               path, NULL);
}

/* A sync through ``real``, journalled when it succeeded on a tracked file. */
static int journalled_sync(int fd, int (*real)(int)) {
    char path[PATH_MAX];
    struct stat st;
    int track = before_sync(fd, path, sizeof path, &st);
    int rc = real(fd);
    after_sync(track && rc == 0, path, &st);
    return rc;
}

int fsync(int fd) {
    resolve();
    return journalled_sync(fd, real_fsync);
}

int fdatasync(int fd) {
    resolve();
    return journalled_sync(fd, real_fdatasync);
}

static void truncated(int fd, long long length) {
    char path[PATH_MAX];
    if (configured && fd_path(fd, path, sizeof path) == 0 && tracked(path))
        record('T', length, path, NULL);
}

int ftruncate(int fd, off_t length) {
    resolve();
    int rc = real_ftruncate(fd, length);
    if (rc == 0)
        truncated(fd, (long long)length);
    return rc;
}

int ftruncate64(int fd, off64_t length) {
    resolve();
    int rc = real_ftruncate64(fd, length);
    if (rc == 0)
        truncated(fd, (long long)length);
    return rc;
}

static void renamed(int olddirfd, const char *oldpath, int newdirfd, const char *newpath) {
    char from[PATH_MAX], to[PATH_MAX];
    if (!configured || at_path(olddirfd, oldpath, from, sizeof from) < 0 ||
        at_path(newdirfd, newpath, to, sizeof to) < 0)
        return;
    if (tracked(from) || tracked(to))
        record('R', 0, from, to);
}

int rename(const char *oldpath, const char *newpath) {
    resolve();
    int rc = real_rename(oldpath, newpath);
    if (rc == 0)
        renamed(AT_FDCWD, oldpath, AT_FDCWD, newpath);
    return rc;
}

int renameat(int olddirfd, const char *oldpath, int newdirfd, const char *newpath) {
    resolve();
    int rc = real_renameat(olddirfd, oldpath, newdirfd, newpath);
    if (rc == 0)
        renamed(olddirfd, oldpath, newdirfd, newpath);
    return rc;
}

int renameat2(int olddirfd, const char *oldpath, int newdirfd, const char *newpath, unsigned int flags) {
    resolve();
    int rc = real_renameat2(olddirfd, oldpath, newdirfd, newpath, flags);
    if (rc == 0)
        renamed(olddirfd, oldpath, newdirfd, newpath);
    return rc;
}

static void unlinked(int dirfd, const char *path) {
    char full[PATH_MAX];
    if (configured && at_path(dirfd, path, full, sizeof full) == 0 && tracked(full))
        record('U', 0, full, NULL);
}

int unlink(const char *path) {
    resolve();
    int rc = real_unlink(path);
    if (rc == 0)
        unlinked(AT_FDCWD, path);
    return rc;
}

int unlinkat(int dirfd, const char *path, int flags) {
    resolve();
    int rc = real_unlinkat(dirfd, path, flags);
    if (rc == 0)
        unlinked(dirfd, path);
    return rc;
}
