// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * gpuasync-play: play a recorded run (gpuasync/record.h, docs/record.md)
 * into gpuasync.ko's emulated card, whose frames come from sysfs, where the
 * simulated card plays one itself (sim/replay):
 *
 *   $ gpuasync-play /sys/class/gpuasync/gpuasync_emu0 /data/run1.gar
 *
 * The whole file is checked first (every record's framing, number and
 * CRC, every payload within what the card takes): a bad file is refused
 * naming the frame, and nothing reaches the card.  Then each frame's
 * payload goes into CARD/replay_frame and its length and TUSER bytes into
 * CARD/replay_push, in file order; a frame that finds no armed write
 * buffer waits for one (as on the card), at most -w seconds.  As the
 * simulated card's sim/replay: -r max (as buffers take them), recorded
 * (each frame at its recorded time after the play's first) or HZ; -n
 * plays (0: until interrupted), -c frames in all, -l live (each
 * TimingHeader's pulse ID moved on by the file's pulse-ID span a play,
 * its time stamp now).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <gpuasync/device.h>
#include <gpuasync/frame.h>
#include <gpuasync/record.h>
#include <gpuasync/timing.h>

static void usage(FILE *f)
{
	fprintf(f, "usage: gpuasync-play [-r max|recorded|HZ] [-n PLAYS] [-c FRAMES] [-l] "
		   "[-w SECONDS] CARD FILE\n"
		   "  CARD        the emulated card's sysfs directory "
		   "(/sys/class/gpuasync/gpuasync_emu0)\n"
		   "  FILE        a recorded run (frames/record, gpuasync-synth)\n"
		   "  -r RATE     max: as fast as armed buffers take them (default); recorded: "
		   "each\n"
		   "              frame at its recorded time after the play's first; HZ: frames "
		   "per second\n"
		   "  -n PLAYS    plays of the file (default 1; 0: until interrupted)\n"
		   "  -c FRAMES   frames in all, across plays (default 0: every frame of every "
		   "play)\n"
		   "  -l          live: each TimingHeader's pulse ID moves on by the file's span "
		   "a play,\n"
		   "              its time stamp is now\n"
		   "  -w SECONDS  how long a frame may wait for an armed buffer (default 10)\n");
}

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void sleep_until(uint64_t t)
{
	struct timespec ts = {.tv_sec = (time_t)(t / 1000000000u),
			      .tv_nsec = (long)(t % 1000000000u)};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* The payload into replay_frame from offset 0 (sysfs takes a page a write). */
static int put_payload(int fd, const uint8_t *p, uint32_t len)
{
	for (uint32_t off = 0; off < len;) {
		ssize_t n = pwrite(fd, p + off, len - off, off);

		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		off += (uint32_t)n;
	}
	return 0;
}

/* Offer the frame until the card takes it, or @wait_ns pass. */
static int push(int fd, uint32_t len, const uint8_t desc[8], uint64_t wait_ns)
{
	struct ga_header h;
	char line[64];
	uint64_t give_up = now_ns() + wait_ns;
	int n;

	ga_header_decode(desc, &h);
	n = snprintf(line, sizeof(line), "%u 0x%02x 0x%02x\n", len, h.first_user, h.last_user);
	while (pwrite(fd, line, (size_t)n, 0) < 0) {
		if (errno != EAGAIN)
			return -errno;
		if (now_ns() > give_up)
			return -ETIMEDOUT;
		sleep_until(now_ns() + 20000); /* the consumer re-arms */
	}
	return 0;
}

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int open_card(const char *card, const char *file, int flags)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", card, file);
	fd = open(path, flags | O_CLOEXEC);
	if (fd < 0)
		fprintf(stderr, "gpuasync-play: %s: %s (not a gpuasync.ko emulated card?)\n", path,
			strerror(errno));
	return fd;
}

int main(int argc, char **argv)
{
	struct ga_rec_reader *r;
	struct ga_rec_file info;
	struct ga_rec_frame f;
	double rate = 0, wait_s = 10;
	bool recorded = false, live = false;
	uint64_t sent = 0, plays = 1, count = 0, t0, play;
	struct ga_rec_extent x = {0};
	uint8_t *copy = NULL;
	struct stat st;
	int opt, ret, data, ctl;

	while ((opt = getopt(argc, argv, "r:n:c:lw:h")) != -1) {
		char *end;

		switch (opt) {
		case 'r':
			recorded = strcmp(optarg, "recorded") == 0;
			if (recorded || strcmp(optarg, "max") == 0)
				break;
			rate = strtod(optarg, &end);
			if (*end || !(rate > 0 && rate <= 1e9))
				goto bad;
			break;
		case 'n':
			plays = strtoull(optarg, &end, 10);
			if (*end || *optarg == '-')
				goto bad;
			break;
		case 'c':
			count = strtoull(optarg, &end, 10);
			if (*end || *optarg == '-')
				goto bad;
			break;
		case 'l':
			live = true;
			break;
		case 'w':
			wait_s = strtod(optarg, &end);
			if (*end || !(wait_s > 0 && wait_s <= 3600))
				goto bad;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			goto bad;
		}
	}
	if (argc - optind != 2)
		goto bad;
	data = open_card(argv[optind], "replay_frame", O_WRONLY);
	ctl = open_card(argv[optind], "replay_push", O_WRONLY);
	if (data < 0 || ctl < 0 || fstat(data, &st) < 0)
		return 1;
	ret = ga_rec_open(argv[optind + 1], &r, &info);
	if (ret < 0) {
		fprintf(stderr, "gpuasync-play: %s\n", ga_last_error());
		return 1;
	}
	/* the whole file first: nothing reaches the card from a bad one */
	while ((ret = ga_rec_next(r, &f)) == 1) {
		if ((off_t)f.payload_bytes > st.st_size) {
			fprintf(stderr,
				"gpuasync-play: %s: frame %llu has %u bytes, more than the card "
				"takes (%lld)\n",
				argv[optind + 1], (unsigned long long)f.number, f.payload_bytes,
				(long long)st.st_size);
			return 1;
		}
		ga_rec_extent_add(&x, &f);
	}
	if (ret < 0 || ga_rec_rewind(r) < 0) {
		fprintf(stderr, "gpuasync-play: %s\n", ga_last_error());
		return 1;
	}
	if (live && !(copy = malloc((size_t)st.st_size))) {
		fprintf(stderr, "gpuasync-play: out of memory\n");
		return 1;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	t0 = now_ns();
	for (play = 0; !stop && (!plays || play < plays) && (!count || sent < count); play++) {
		if (play && ga_rec_rewind(r) < 0)
			break;
		while (!stop && (!count || sent < count) && (ret = ga_rec_next(r, &f)) == 1) {
			const uint8_t *p = f.payload;

			if (recorded)
				sleep_until(t0 + play * ga_rec_play_ns(&x) +
					    (f.monotonic_ns - x.first_ns));
			else if (rate > 0)
				sleep_until(t0 + (uint64_t)((double)sent * 1e9 / rate));
			if (live && (f.flags & GA_REC_F_TIMING) &&
			    f.th_off + GA_TIMING_HDR_BYTES <= f.payload_bytes) {
				memcpy(copy, f.payload, f.payload_bytes);
				ga_rec_live(copy + f.th_off, play * ga_rec_pulse_span(&x));
				p = copy;
			}
			ret = put_payload(data, p, f.payload_bytes);
			if (ret == 0)
				ret = push(ctl, f.payload_bytes, f.desc, (uint64_t)(wait_s * 1e9));
			if (ret < 0) {
				fprintf(stderr, "gpuasync-play: play %llu, frame %llu: %s\n",
					(unsigned long long)play + 1, (unsigned long long)f.number,
					ret == -ETIMEDOUT
						? "no write buffer armed within the wait (-w)"
						: strerror(-ret));
				return 1;
			}
			sent++;
		}
		if (ret < 0) { /* changed since the check */
			fprintf(stderr, "gpuasync-play: %s\n", ga_last_error());
			return 1;
		}
	}
	ga_rec_close(r);
	free(copy);
	printf("%llu frames played in %.3f s (%llu plays begun)\n", (unsigned long long)sent,
	       (double)(now_ns() - t0) / 1e9, (unsigned long long)play);
	return 0;
bad:
	usage(stderr);
	return 2;
}
