/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * http: the mount's metrics served over HTTP, and a Prometheus file_sd
 * target file naming this daemon, so a fleet's Prometheus finds every card
 * the way it finds the DAQ's own processes.
 *
 *   $ gpuasyncfs -o http=127.0.0.2:9330,targets_dir=/srv/prom/tmo \
 *         -o instrument=tmo,partition=2,detname=jungfrau,alias=jungfrau_0 \
 *         /dev/datadev_0 /mnt/gpuasync
 *   $ curl -s http://127.0.0.2:9330/metrics | head -3     # = /mnt/gpuasync/metrics
 *   $ cat /srv/prom/tmo/gpuasyncfs_127.0.0.2_9330.yaml
 *   - targets:
 *       - '127.0.0.2:9330'
 *     labels:
 *       instrument: 'tmo'
 *       ...
 *
 * The server is libmicrohttpd's, with its own thread; each GET /metrics
 * renders the same text as the file (fs_render_node on the metrics row),
 * so both are one code path.  The listening socket is bound here, before
 * the daemon reports that it started, so a port in use fails the start
 * with the reason (EADDRINUSE) instead of a daemon that serves nothing.
 *
 * The target file (file_sd's YAML: a list of {targets, labels}) is written
 * to a temporary name and renamed, so Prometheus never reads half of one;
 * it is written at every start and removed at a clean stop (unmount,
 * SIGTERM).  A daemon that dies leaves it, and Prometheus then shows the
 * target down: that is the fleet's "daemon gone" signal (up == 0).
 * Its name, gpuasyncfs_HOST_PORT.yaml, is unique per served address; HOST
 * is the bound address, or this host's name when every address is served.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fs.h"

#ifdef GA_HAVE_MICROHTTPD
#include <microhttpd.h>

struct fs_http {
	struct MHD_Daemon *mhd;
	const struct fs_node *metrics; /* the row GET /metrics renders */
	char target[300];	       /* "HOST:PORT" as Prometheus should scrape it */
	char file[560];		       /* the target file, "" when none was written */
};

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned int status, const char *type,
			     char *body, size_t len)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	/* libmicrohttpd frees @body with the response */
	r = MHD_create_response_from_buffer_with_free_callback(len, body, free);
	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result reply_text(struct MHD_Connection *conn, unsigned int status,
				  const char *text)
{
	char *body = strdup(text);

	return body ? reply(conn, status, "text/plain; charset=utf-8", body, strlen(body)) : MHD_NO;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
			      const char *method, const char *version, const char *upload,
			      size_t *upload_size, void **req)
{
	struct fs *fs = cls;
	struct strbuf sb = {0};
	char why[256];
	int ret;

	(void)version;
	(void)upload;
	(void)upload_size;
	(void)req;
	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
		return reply_text(conn, MHD_HTTP_METHOD_NOT_ALLOWED,
				  "only GET and HEAD: the metrics are read-only\n");
	if (!strcmp(url, "/"))
		return reply_text(conn, MHD_HTTP_OK,
				  "gpuasyncfs: the card's Prometheus metrics are at /metrics\n");
	if (strcmp(url, "/metrics") != 0)
		return reply_text(conn, MHD_HTTP_NOT_FOUND,
				  "not found: gpuasyncfs serves /metrics only\n");
	ret = fs_render_node(fs, fs->http->metrics, 0, &sb);
	if (ret < 0) {
		sb_free(&sb);
		snprintf(why, sizeof(why), "cannot render the metrics: %s\n", fs_last_error());
		return reply_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, why);
	}
	/* the text format's content type (exposition format 0.0.4) */
	return reply(conn, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", sb.buf, sb.len);
}

/* file_sd's YAML for this daemon, written whole or not at all. */
static int write_target_file(struct fs *fs, struct fs_http *h, const char *host, unsigned int port)
{
	const struct {
		const char *name, *value;
	} labels[] = {
		{"instrument", fs->cfg.instrument},
		{"partition", fs->cfg.partition},
		{"detname", fs->cfg.detname},
		{"alias", fs->cfg.alias},
	};
	char tmp[600];
	bool any = false;
	FILE *f;
	int err;

	snprintf(h->file, sizeof(h->file), "%s/gpuasyncfs_%s_%u.yaml", fs->cfg.targets_dir, host,
		 port);
	snprintf(tmp, sizeof(tmp), "%s/.gpuasyncfs_%s_%u.yaml.tmp", fs->cfg.targets_dir, host,
		 port);
	f = fopen(tmp, "w");
	if (!f) {
		err = -errno;
		h->file[0] = '\0';
		return fs_err(err, "[prometheus] targets_dir: cannot write %s: %s", tmp,
			      strerror(-err));
	}
	fprintf(f, "# written by gpuasyncfs (pid %ld) serving %s; removed when it stops\n",
		(long)getpid(), fs->device_spec);
	fprintf(f, "- targets:\n    - '%s'\n", h->target);
	for (size_t i = 0; i < sizeof(labels) / sizeof(labels[0]); i++) {
		if (!labels[i].value[0])
			continue;
		if (!any)
			fprintf(f, "  labels:\n");
		any = true;
		/* values are letters, digits and _.:/- (config.c): quoting suffices */
		fprintf(f, "    %s: '%s'\n", labels[i].name, labels[i].value);
	}
	if (fflush(f) != 0 || ferror(f) || fsync(fileno(f)) != 0) {
		err = -errno;
		fclose(f);
		unlink(tmp);
		h->file[0] = '\0';
		return fs_err(err ? err : -EIO, "[prometheus] targets_dir: cannot write %s", tmp);
	}
	fclose(f);
	if (rename(tmp, h->file) != 0) {
		err = -errno;
		unlink(tmp);
		h->file[0] = '\0';
		return fs_err(err, "[prometheus] targets_dir: cannot rename %s: %s", tmp,
			      strerror(-err));
	}
	return 0;
}

int fs_http_start(struct fs *fs)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	char addr[64], host[256];
	unsigned int port;
	struct fs_http *h;
	char *colon;
	int fd, one = 1, err;

	if (!fs->cfg.http[0]) {
		if (fs->cfg.targets_dir[0])
			return fs_err(-EINVAL, "[prometheus] targets_dir needs http=[ADDR:]PORT: a "
					       "target file names the address Prometheus scrapes");
		return 0;
	}
	/* config.c stored "a.b.c.d:PORT" */
	snprintf(addr, sizeof(addr), "%s", fs->cfg.http);
	colon = strrchr(addr, ':');
	if (!colon)
		return fs_err(-EINVAL, "[prometheus] http=%s: not ADDR:PORT", fs->cfg.http);
	*colon = '\0';
	port = (unsigned int)strtoul(colon + 1, NULL, 10);
	if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1)
		return fs_err(-EINVAL, "[prometheus] http=%s: not an IPv4 address", fs->cfg.http);
	sa.sin_port = htons((uint16_t)port);

	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	for (unsigned int i = 0; i < fs->nrows; i++)
		if (fs->rows[i].parent == FS_D_ROOT && !strcmp(fs->rows[i].name, "metrics"))
			h->metrics = &fs->rows[i];
	if (!h->metrics) {
		free(h);
		return fs_err(-ENOENT, "no metrics file to serve");
	}
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		err = -errno;
		goto out_free;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, 64) != 0) {
		err = -errno;
		close(fd);
		fs_err(err, "[prometheus] http=%s: cannot listen there: %s%s", fs->cfg.http,
		       strerror(-err),
		       err == -EADDRINUSE ? " (another program, or another gpuasyncfs, serves "
					    "that port: give each mount its own)"
					  : "");
		goto out_free;
	}
	fs->http = h;
	h->mhd = MHD_start_daemon(MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL,
				  handle, fs, MHD_OPTION_LISTEN_SOCKET, fd,
				  MHD_OPTION_CONNECTION_LIMIT, 64u, MHD_OPTION_CONNECTION_TIMEOUT,
				  30u, MHD_OPTION_END);
	if (!h->mhd) {
		close(fd);
		err = fs_err(-EIO, "[prometheus] http=%s: libmicrohttpd did not start",
			     fs->cfg.http);
		goto out_unset;
	}
	if (strcmp(addr, "0.0.0.0") != 0) {
		snprintf(host, sizeof(host), "%s", addr);
	} else if (gethostname(host, sizeof(host)) != 0) {
		snprintf(host, sizeof(host), "localhost");
	}
	host[sizeof(host) - 1] = '\0';
	snprintf(h->target, sizeof(h->target), "%s:%u", host, port);
	if (fs->cfg.targets_dir[0]) {
		err = write_target_file(fs, h, host, port);
		if (err < 0)
			goto out_stop;
	}
	return 0;

out_stop:
	MHD_stop_daemon(h->mhd);
out_unset:
	fs->http = NULL;
out_free:
	free(h);
	return err;
}

void fs_http_stop(struct fs *fs)
{
	struct fs_http *h = fs->http;

	if (!h)
		return;
	/* first the file: from here on Prometheus should not look for us */
	if (h->file[0] && unlink(h->file) != 0 && errno != ENOENT)
		fs_error_add(fs, "prometheus", -errno, "cannot remove the target file");
	MHD_stop_daemon(h->mhd);
	fs->http = NULL;
	free(h);
}

#else /* !GA_HAVE_MICROHTTPD */

int fs_http_start(struct fs *fs)
{
	if (!fs->cfg.http[0] && !fs->cfg.targets_dir[0])
		return 0;
	return fs_err(-ENOTSUP, "[prometheus] http and targets_dir: this gpuasyncfs was built "
				"without libmicrohttpd (install libmicrohttpd-dev and rebuild)");
}

void fs_http_stop(struct fs *fs)
{
	(void)fs;
}

#endif
