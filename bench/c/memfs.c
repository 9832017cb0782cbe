/*
 * Baseline for bench/fuse-read.sh: a minimal read-only in-memory libfuse (2.9, high-level API)
 * file system. It loads one file into memory and serves it as /data. Default libfuse options
 * (multi-threaded), as a plain C FUSE file system would run.
 * Build: gcc -O2 -o memfs memfs.c $(pkg-config fuse --cflags --libs)
 * Run:   memfs <file> <mountpoint> [fuse options]
 */
#define FUSE_USE_VERSION 26
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static char *data;
static size_t size;

static int fs_getattr(const char *path, struct stat *st) {
    memset(st, 0, sizeof(*st));
    if (strcmp(path, "/") == 0) {
        st->st_mode = S_IFDIR | 0755;
        st->st_nlink = 2;
        return 0;
    }
    if (strcmp(path, "/data") == 0) {
        st->st_mode = S_IFREG | 0444;
        st->st_nlink = 1;
        st->st_size = (off_t) size;
        return 0;
    }
    return -ENOENT;
}

static int fs_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off, struct fuse_file_info *fi) {
    (void) off;
    (void) fi;
    if (strcmp(path, "/") != 0) {
        return -ENOENT;
    }
    fill(buf, ".", NULL, 0);
    fill(buf, "..", NULL, 0);
    fill(buf, "data", NULL, 0);
    return 0;
}

static int fs_open(const char *path, struct fuse_file_info *fi) {
    if (strcmp(path, "/data") != 0) {
        return -ENOENT;
    }
    if ((fi->flags & O_ACCMODE) != O_RDONLY) {
        return -EROFS;
    }
    return 0;
}

static int fs_read(const char *path, char *buf, size_t n, off_t off, struct fuse_file_info *fi) {
    (void) path;
    (void) fi;
    if ((size_t) off >= size) {
        return 0;
    }
    if (n > size - (size_t) off) {
        n = size - (size_t) off;
    }
    memcpy(buf, data + off, n);
    return (int) n;
}

static struct fuse_operations ops = {
    .getattr = fs_getattr,
    .readdir = fs_readdir,
    .open = fs_open,
    .read = fs_read,
};

int main(int argc, char *argv[]) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s <file> <mountpoint> [fuse options]\n", argv[0]);
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    fseek(f, 0, SEEK_END);
    size = (size_t) ftell(f);
    fseek(f, 0, SEEK_SET);
    data = malloc(size);
    if (!data || fread(data, 1, size, f) != size) {
        fprintf(stderr, "cannot load %s\n", argv[1]);
        return 1;
    }
    fclose(f);
    /* fuse_main(argv[2..]) with the mount point first */
    argv[1] = argv[0];
    return fuse_main(argc - 1, argv + 1, &ops, NULL);
}
