// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * device/topology and gpuasyncfs --topology: which GPU a card pairs with
 * and why.  The pairing is the rule LCLS-II's nodes give Slurm
 * (gen_gres_conf.py writes gres.conf from it after every datadev load), so
 * what this prints is what a DRP asking Slurm for the card's GPU gets:
 *
 *   - a device's ancestry is its sysfs path from the root complex
 *     (pci0000:00) down to the bridge above it; two devices' shared depth
 *     is how many leading entries they have in common: 0 different root
 *     complexes, 1 the root complex only, 2 or more a bridge below it
 *     (a root port or a switch), which the rule calls local;
 *   - the cards with GPU async enabled (/proc/datadev_N), in the order of
 *     their names, each take the free GPU with the deepest shared
 *     ancestry (the first in PCI address order on a tie) - in a first
 *     pass only where that is local, then the rest in a second pass, at
 *     any depth; a GPU serves one card, a card left without one is unpaired;
 *   - GPUs the NVIDIA driver excludes, or reports as not PCIe while their
 *     link speed cannot be read (failed, removal refused), are left out.
 *
 * Everything is read from sysfs and procfs under the run's root, so it
 * works whatever driver is bound.  Cards without a /proc/datadev_N (which
 * the rule cannot see) are paired by their PCI address after the named ones.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pf.h"

#define MAXD	     GA_PLATFORM_MAX_DEVS
#define ANC_MAX	     32
#define CPU_BITS     4096
#define RULE_LOCAL   2 /* shared depth of a bridge below the root complex */
#define WORDS(nbits) (((nbits) + 63) / 64)

/* Root complex, then the bridges above the device, then the device. */
struct anc {
	char rc[64];
	char b[ANC_MAX][16];
	int n; /* bridges, the device itself not counted */
	char dev[16];
};

struct tcard {
	int i;	       /* index into pf->cards */
	char proc[64]; /* "datadev_84", "" when there is no /proc entry */
	int gpu_en;    /* GPU Async En: 1, 0, -1 no /proc entry */
	int gpu;       /* the rule's GPU (index into pf->gpu), -1 none */
	int depth;
};

struct tgpu {
	bool listed;	/* the NVIDIA driver has /proc/driver/nvidia/gpus/BDF */
	int minor;	/* Device Minor, -1 unknown */
	char skip[160]; /* why the rule leaves it out, "" when it does not */
};

static void ancestry(const struct pf_dev *d, struct anc *a)
{
	char c[ANC_MAX][16];
	int n = pf_chain(d, a->rc, sizeof(a->rc), c, ANC_MAX);

	a->n = n > 0 ? n - 1 : 0;
	for (int i = 0; i < a->n; i++)
		memcpy(a->b[i], c[i], sizeof(a->b[i]));
	snprintf(a->dev, sizeof(a->dev), "%s", d->bdf);
}

/* The rule's shared depth.  It finds the root complex as a "pci0000:"
 * component of the path: a device in another PCI domain has no ancestry
 * there, and so depth 0 with everything. */
static int rule_depth(const struct anc *x, const struct anc *y)
{
	int k = 0;

	if (!x->rc[0] || strcmp(x->rc, y->rc) || strncmp(x->rc, "pci0000:", 8))
		return 0;
	while (k < x->n && k < y->n && !strcmp(x->b[k], y->b[k]))
		k++;
	return 1 + k;
}

static void out(struct ga_topology *t, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void out(struct ga_topology *t, const char *key, const char *fmt, ...)
{
	size_t n = strlen(t->text);
	va_list ap;

	if (n + 1 >= sizeof(t->text))
		return;
	n += (size_t)snprintf(t->text + n, sizeof(t->text) - n, "%-9s ", key);
	if (n + 1 >= sizeof(t->text))
		return;
	va_start(ap, fmt);
	n += (size_t)vsnprintf(t->text + n, sizeof(t->text) - n, fmt, ap);
	va_end(ap);
	if (n + 1 < sizeof(t->text))
		strcat(t->text, "\n");
}

/* Append to a "; "-separated list in @buf. */
static void add(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void add(char *buf, size_t len, const char *fmt, ...)
{
	size_t n = strlen(buf);
	va_list ap;

	if (n && n + 2 < len) {
		strcat(buf, "; ");
		n += 2;
	}
	va_start(ap, fmt);
	if (n + 1 < len)
		vsnprintf(buf + n, len - n, fmt, ap);
	va_end(ap);
}

static void path_text(const struct anc *a, char *buf, size_t len)
{
	size_t n = (size_t)snprintf(buf, len, "%s", a->rc[0] ? a->rc : "?");

	for (int i = 0; i < a->n && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, " > %s", a->b[i]);
	if (n < len)
		snprintf(buf + n, len - n, " > %s", a->dev);
}

/* "0-3,8" from a bitmap. */
static void ranges(const uint64_t *bits, unsigned int nbits, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = 0;
	for (unsigned int i = 0; i < nbits && n < len; i++) {
		unsigned int j = i;

		if (!(bits[i / 64] >> (i % 64) & 1))
			continue;
		while (j + 1 < nbits && (bits[(j + 1) / 64] >> ((j + 1) % 64) & 1))
			j++;
		n += (size_t)(j == i ? snprintf(buf + n, len - n, "%s%u", n ? "," : "", i)
				     : snprintf(buf + n, len - n, "%s%u-%u", n ? "," : "", i, j));
		i = j;
	}
}

/* /proc/datadev_N whose first line names @bdf: its name and GPU Async En. */
static void card_proc(struct pf *pf, const char *bdf, struct tcard *c)
{
	static char text[8192]; /* under the run lock */
	char p[PATH_MAX];
	struct dirent *e;
	DIR *d;

	c->proc[0] = 0;
	c->gpu_en = -1;
	pf_path(pf, p, "/proc");
	if (!(d = opendir(p)))
		return;
	while ((e = readdir(d))) {
		char *save = NULL, *l, *s;
		int v;

		if (strncmp(e->d_name, "datadev_", 8) ||
		    pf_read(pf, text, sizeof(text), "/proc/%s", e->d_name))
			continue;
		/* "PCIe[BUS:NUM:SLOT.FUNC] : 0000:01:00.0" */
		if (strncmp(text, "PCIe[", 5) || !(s = strstr(text, "] :")) ||
		    strncasecmp(s + 3 + strspn(s + 3, " \t"), bdf, 12))
			continue;
		snprintf(c->proc, sizeof(c->proc), "%.63s", e->d_name);
		c->gpu_en = 0; /* no such line: the rule takes it as no GPU support */
		for (l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
			if (sscanf(l, " GPU Async En : %d", &v) == 1)
				c->gpu_en = v != 0;
		break;
	}
	closedir(d);
}

/* What the NVIDIA driver says of GPU @bdf, and whether the rule skips it. */
static void gpu_info(struct pf *pf, const char *bdf, struct tgpu *g)
{
	char text[4096], bus[32] = "", excl[32] = "", speed[64], *save = NULL, *l;
	bool have_minor = false;

	memset(g, 0, sizeof(*g));
	g->minor = -1;
	if (pf_read(pf, text, sizeof(text), "/proc/driver/nvidia/gpus/%s/information", bdf))
		return; /* no NVIDIA driver in front of it: nothing says to skip it */
	g->listed = true;
	for (l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		if (sscanf(l, "Device Minor: %d", &g->minor) == 1)
			have_minor = true;
		sscanf(l, "GPU Excluded: %31s", excl);
		sscanf(l, "Bus Type: %31s", bus);
	}
	if (!have_minor)
		snprintf(g->skip, sizeof(g->skip), "no Device Minor in its NVIDIA information");
	else if (excl[0] && strcmp(excl, "No"))
		snprintf(g->skip, sizeof(g->skip), "excluded by the NVIDIA driver");
	else if (bus[0] && strcmp(bus, "PCIe") &&
		 (pf_read(pf, speed, sizeof(speed), "/sys/bus/pci/devices/%s/current_link_speed",
			  bdf) ||
		  !speed[0]))
		/* Both signs of a GPU that failed and could not be removed. */
		snprintf(
			g->skip, sizeof(g->skip),
			"failed: Bus Type %s and no link speed (removal refused; see Xid in dmesg)",
			bus);
}

/* Slurm's Cores= for a GPU as the rule gives it: every core of each socket
 * holding one of the GPU's local CPUs (Slurm refuses a set that splits a
 * socket), cores numbered as Slurm does (hyperthread siblings are one core,
 * counted in the order of their lowest CPU).  0, or -errno: not given. */
static int slurm_cores(struct pf *pf, const char *bdf, char *cores, size_t clen, char *sockets,
		       size_t slen)
{
	static uint64_t local[WORDS(CPU_BITS)], sib[WORDS(CPU_BITS)], first[WORDS(CPU_BITS)],
		pkgs[WORDS(CPU_BITS)], want[WORDS(CPU_BITS)], present[WORDS(CPU_BITS)];
	static int key[CPU_BITS], pkg[CPU_BITS], idx[CPU_BITS]; /* under the run lock */
	char text[4096], p[PATH_MAX];
	unsigned long long v;
	struct dirent *e;
	unsigned int cpu;
	int k = 0;
	DIR *d;

	if (pf_read(pf, text, sizeof(text), "/sys/bus/pci/devices/%s/local_cpulist", bdf) ||
	    !text[0] || pf_parse_list(text, local, CPU_BITS))
		return -ENOENT;
	memset(first, 0, sizeof(first));
	memset(present, 0, sizeof(present));
	pf_path(pf, p, "/sys/devices/system/cpu");
	if (!(d = opendir(p)))
		return -ENOENT;
	while ((e = readdir(d))) {
		char *end;
		int n;

		if (strncmp(e->d_name, "cpu", 3) || !e->d_name[3])
			continue;
		cpu = (unsigned int)strtoul(e->d_name + 3, &end, 10);
		if (*end || cpu >= CPU_BITS)
			continue;
		if (pf_read(pf, text, sizeof(text),
			    "/sys/devices/system/cpu/%s/topology/thread_siblings_list",
			    e->d_name) ||
		    pf_parse_list(text, sib, CPU_BITS) ||
		    pf_read_ull(pf, &v, "/sys/devices/system/cpu/%s/topology/physical_package_id",
				e->d_name) ||
		    v >= CPU_BITS) {
			closedir(d);
			return -ENOENT;
		}
		for (n = 0; n < CPU_BITS && !(sib[n / 64] >> (n % 64) & 1); n++)
			;
		key[cpu] = n < CPU_BITS ? n : (int)cpu;
		pkg[cpu] = (int)v;
		present[cpu / 64] |= 1ull << (cpu % 64);
		first[key[cpu] / 64] |= 1ull << (key[cpu] % 64);
	}
	closedir(d);
	/* A core's number: how many cores have a lower first CPU. */
	for (int n = 0; n < CPU_BITS; n++) {
		idx[n] = k;
		k += (int)(first[n / 64] >> (n % 64) & 1);
	}
	memset(pkgs, 0, sizeof(pkgs));
	memset(want, 0, sizeof(want));
	for (cpu = 0; cpu < CPU_BITS; cpu++)
		if ((present[cpu / 64] & local[cpu / 64]) >> (cpu % 64) & 1)
			pkgs[pkg[cpu] / 64] |= 1ull << (pkg[cpu] % 64);
	for (cpu = 0; cpu < CPU_BITS; cpu++)
		if ((present[cpu / 64] >> (cpu % 64) & 1) &&
		    (pkgs[pkg[cpu] / 64] >> (pkg[cpu] % 64) & 1))
			want[idx[key[cpu]] / 64] |= 1ull << (idx[key[cpu]] % 64);
	ranges(want, CPU_BITS, cores, clen);
	ranges(pkgs, CPU_BITS, sockets, slen);
	return cores[0] ? 0 : -ENOENT;
}

static void numa_line(struct ga_topology *t, struct pf *pf, const char *key, const char *bdf,
		      long long *node)
{
	char cpus[512];
	unsigned long long v;

	*node = -2; /* unread */
	if (!pf_read_ull(pf, &v, "/sys/bus/pci/devices/%s/numa_node", bdf))
		*node = (long long)v;
	else {
		char s[32];

		if (!pf_read(pf, s, sizeof(s), "/sys/bus/pci/devices/%s/numa_node", bdf))
			*node = strtoll(s, NULL, 10); /* "-1": the firmware gave none */
	}
	if (pf_read(pf, cpus, sizeof(cpus), "/sys/bus/pci/devices/%s/local_cpulist", bdf))
		snprintf(cpus, sizeof(cpus), "? (no local_cpulist)");
	if (*node == -2)
		out(t, key, "node ? (no numa_node), local CPUs %s", cpus);
	else if (*node < 0)
		out(t, key, "node %lld (the firmware gave none), local CPUs %s", *node, cpus);
	else
		out(t, key, "node %lld, local CPUs %s", *node, cpus);
}

/* Why depth @d: where the two paths part. */
static void why_text(const struct anc *a, const struct anc *b, int d, char *buf, size_t len)
{
	if (d == 0 && a->rc[0] && !strcmp(a->rc, b->rc))
		snprintf(buf, len,
			 "shared ancestry depth 0: PCI domain %.4s, which the rule does not "
			 "follow (it looks for pci0000:)",
			 a->rc + 3);
	else if (d == 0)
		snprintf(buf, len, "different root complexes (%s, %s): shared ancestry depth 0",
			 a->rc[0] ? a->rc : "?", b->rc[0] ? b->rc : "?");
	else if (d == 1)
		snprintf(buf, len,
			 "root complex only (%s, different root ports): shared ancestry depth 1, "
			 "peer traffic crosses the root complex",
			 a->rc);
	else if (d == 2)
		snprintf(buf, len, "same root port %s: shared ancestry depth 2", a->b[0]);
	else
		snprintf(buf, len,
			 "same PCIe switch: both below switch port %s, shared ancestry depth %d",
			 a->b[d - 2], d);
}

/* Is @bdf on the bus (its sysfs directory there)? */
static bool on_bus(struct pf *pf, const char *bdf)
{
	return pf_exists(pf, "/sys/bus/pci/devices/%s", bdf);
}

/* GPUs that are named (--gpu) or listed by the NVIDIA driver but have left
 * the bus, into @buf. */
static int gone_gpus(struct pf *pf, char *buf, size_t len)
{
	char list[512], p[PATH_MAX], *save = NULL, *tok;
	struct dirent *e;
	int n = 0;
	DIR *d;

	buf[0] = 0;
	if (pf->o->gpus) {
		snprintf(list, sizeof(list), "%s", pf->o->gpus);
		for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
			if (pf_is_bdf(tok) && !on_bus(pf, tok)) {
				add(buf, len, "GPU %s (named) is not on the PCI bus", tok);
				n++;
			}
	}
	pf_path(pf, p, "/proc/driver/nvidia/gpus");
	if ((d = opendir(p))) {
		while ((e = readdir(d)))
			if (pf_is_bdf(e->d_name) && !on_bus(pf, e->d_name) &&
			    !strstr(buf, e->d_name)) {
				add(buf, len,
				    "GPU %s (listed by the NVIDIA driver) is not on the PCI bus",
				    e->d_name);
				n++;
			}
		closedir(d);
	}
	return n;
}

void pf_topology(struct pf *pf, struct ga_topology *t)
{
	static struct anc ca[MAXD], ga[MAXD]; /* under the run lock */
	static struct tcard cards[MAXD];
	static struct tgpu gi[MAXD];
	int order[MAXD], gorder[MAXD], nfree = 0, freel[MAXD], pick[MAXD], dist[MAXD][MAXD];
	char why[512], verdict[768] = "", path[ANC_MAX * 16 + 128], gone[768], skipped[512] = "",
		       pairs[1024] = "", cores[512] = "", sockets[256], file[64];
	struct tcard *me = NULL;
	unsigned int nc = pf->ncards, ng = pf->ngpu;
	long long cnode, gnode;
	int ngone, g;

	t->text[0] = 0;
	t->gpu[0] = 0;
	t->verdict = GA_VERDICT_OK;
	if (!pf->have_card) {
		t->verdict = GA_VERDICT_FAIL;
		out(t, "verdict", "FAIL: %s", pf->res[GA_CHECK_CARD].found);
		return;
	}
	/* The cards in the rule's order: /proc/datadev_N names, then the
	 * rest by PCI address (the rule cannot see those). */
	for (unsigned int c = 0; c < nc; c++) {
		cards[c] = (struct tcard){.i = (int)c, .gpu = -1};
		card_proc(pf, pf->cards[c].bdf, &cards[c]);
		ancestry(&pf->cards[c], &ca[c]);
		order[c] = (int)c;
	}
	for (unsigned int a = 1; a < nc; a++)
		for (unsigned int b = a; b > 0; b--) {
			const struct tcard *x = &cards[order[b - 1]], *y = &cards[order[b]];
			bool swap = x->proc[0] && y->proc[0] ? strcmp(x->proc, y->proc) > 0
				    : x->proc[0] || y->proc[0]
					    ? !x->proc[0]
					    : strcmp(pf->cards[x->i].bdf, pf->cards[y->i].bdf) > 0;
			int tmp;

			if (!swap)
				break;
			tmp = order[b - 1];
			order[b - 1] = order[b];
			order[b] = tmp;
		}
	/* The GPUs in PCI address order, without those the rule skips. */
	for (unsigned int i = 0; i < ng; i++) {
		gi[i] = (struct tgpu){0};
		gpu_info(pf, pf->gpu[i].bdf, &gi[i]);
		ancestry(&pf->gpu[i], &ga[i]);
		gorder[i] = (int)i;
	}
	for (unsigned int a = 1; a < ng; a++)
		for (unsigned int b = a;
		     b > 0 && strcmp(pf->gpu[gorder[b - 1]].bdf, pf->gpu[gorder[b]].bdf) > 0; b--) {
			int tmp = gorder[b - 1];

			gorder[b - 1] = gorder[b];
			gorder[b] = tmp;
		}
	for (unsigned int i = 0; i < ng; i++) {
		if (gi[gorder[i]].skip[0])
			add(skipped, sizeof(skipped), "GPU %s: %s", pf->gpu[gorder[i]].bdf,
			    gi[gorder[i]].skip);
		else
			freel[nfree++] = gorder[i];
	}
	/* The rule: local pairs first, then the rest, each card in order
	 * taking the free GPU it shares the most ancestry with. */
	for (int pass = 0; pass < 2; pass++)
		for (unsigned int k = 0; k < nc && nfree; k++) {
			struct tcard *c = &cards[order[k]];
			int best = -1, bd = -1;

			if (c->gpu_en == 0 || c->gpu >= 0)
				continue;
			for (int f = 0; f < nfree; f++) {
				int d = rule_depth(&ca[c->i], &ga[freel[f]]);

				if (d > bd) {
					bd = d;
					best = f;
				}
			}
			if (pass == 0 && bd < RULE_LOCAL)
				continue;
			c->gpu = freel[best];
			c->depth = bd;
			memmove(&freel[best], &freel[best + 1],
				(size_t)(nfree - best - 1) * sizeof(int));
			nfree--;
		}
	for (unsigned int k = 0; k < nc; k++) {
		const struct tcard *c = &cards[order[k]];

		if (c->gpu >= 0)
			add(pairs, sizeof(pairs), "%s -> %s (depth %d)", pf->cards[c->i].bdf,
			    pf->gpu[c->gpu].bdf, c->depth);
		else
			add(pairs, sizeof(pairs), "%s -> none", pf->cards[c->i].bdf);
		if (c->i == 0)
			me = &cards[order[k]];
	}
	pf_pair(pf, dist, pick);

	/* This card (cards[0]: the card the run is about). */
	g = me->gpu;
	if (me->gpu_en == 0) {
		t->verdict = GA_VERDICT_FAIL;
		add(verdict, sizeof(verdict), "GPU async is off on this card (/proc/%s)", me->proc);
	} else if (g < 0) {
		t->verdict = GA_VERDICT_FAIL;
		add(verdict, sizeof(verdict), "no GPU for this card");
	} else {
		snprintf(t->gpu, sizeof(t->gpu), "%s", pf->gpu[g].bdf);
		if (me->depth < RULE_LOCAL) {
			t->verdict = GA_VERDICT_WARN;
			add(verdict, sizeof(verdict),
			    "not behind one switch with its GPU (depth %d)", me->depth);
		}
	}
	if (me->proc[0])
		out(t, "card", "%s %s, GPU Async En %d", pf->card.bdf, me->proc, me->gpu_en);
	else
		out(t, "card", "%s (no /proc/datadev_N: gen_gres_conf.py does not see it)",
		    pf->card.bdf);
	if (g >= 0) {
		out(t, "gpu", "%s", pf->gpu[g].bdf);
		why_text(&ca[0], &ga[g], me->depth, why, sizeof(why));
		/* A nearer GPU that an earlier card took. */
		for (unsigned int i = 0; i < nc; i++) {
			const struct tcard *o = &cards[i];

			if (o != me && o->gpu >= 0 && rule_depth(&ca[0], &ga[o->gpu]) > me->depth) {
				size_t n = strlen(why);

				snprintf(why + n, sizeof(why) - n,
					 "; GPU %s shares more (depth %d) but went to card %s, "
					 "first in the rule's order",
					 pf->gpu[o->gpu].bdf, rule_depth(&ca[0], &ga[o->gpu]),
					 pf->cards[o->i].bdf);
				break;
			}
		}
		out(t, "why", "%s", why);
	} else if (me->gpu_en == 0) {
		out(t, "gpu",
		    "none: GPU Async En is 0 in /proc/%s (firmware without GPU async, or "
		    "a driver built without it)",
		    me->proc);
	} else {
		out(t, "gpu", "none: %s",
		    !ng		       ? "no GPU on the bus"
		    : !nfree && nc > 1 ? "every GPU went to a card before it in the rule's order"
				       : "no GPU the rule may use");
	}
	path_text(&ca[0], path, sizeof(path));
	out(t, "card_path", "%s", path);
	if (g >= 0) {
		path_text(&ga[g], path, sizeof(path));
		out(t, "gpu_path", "%s", path);
	}
	numa_line(t, pf, "card_numa", pf->card.bdf, &cnode);
	if (g >= 0) {
		numa_line(t, pf, "gpu_numa", pf->gpu[g].bdf, &gnode);
		if (cnode >= 0 && gnode >= 0 && cnode != gnode) {
			if (t->verdict < GA_VERDICT_WARN)
				t->verdict = GA_VERDICT_WARN;
			add(verdict, sizeof(verdict), "card on NUMA node %lld, GPU on %lld", cnode,
			    gnode);
		}
		if (slurm_cores(pf, pf->gpu[g].bdf, cores, sizeof(cores), sockets,
				sizeof(sockets)) == 0)
			out(t, "cores",
			    "%s: every core of socket %s, where the GPU's local CPUs are", cores,
			    sockets);
		else
			out(t, "cores",
			    "? (could not tell: local_cpulist or the CPUs' topology "
			    "unreadable; the rule then gives no Cores=)");
		/* The gres.conf record the rule writes (its Type: dd + the card's bus). */
		snprintf(file, sizeof(file), " File=/dev/nvidia%d", gi[g].minor);
		out(t, "gres", "Name=gpu Type=dd%.2s%s%s%s%s", pf->card.bdf + 5,
		    gi[g].minor >= 0 ? file : "", cores[0] ? " Cores=" : "", cores,
		    gi[g].minor < 0 ? " (no File=: the NVIDIA driver does not list this GPU)" : "");
	}
	/* The doctor's pairing check: nearest by hops, never across root
	 * complexes, a GPU shared once every GPU has a card. */
	if (pick[0] >= 0) {
		bool same = pick[0] == g;

		out(t, "doctor", "GPU %s (the pairing check, %d hops): %s", pf->gpu[pick[0]].bdf,
		    dist[0][pick[0]], same ? "the same" : "DIFFERS from the rule");
		if (!same)
			add(verdict, sizeof(verdict), "the doctor's pairing check picks GPU %s",
			    pf->gpu[pick[0]].bdf);
	} else {
		out(t, "doctor", "none (the pairing check: no GPU on the card's root complex): %s",
		    g < 0 ? "the same" : "DIFFERS from the rule");
		if (g >= 0)
			add(verdict, sizeof(verdict), "the doctor's pairing check picks none");
	}
	if (pick[0] != g && t->verdict < GA_VERDICT_WARN)
		t->verdict = GA_VERDICT_WARN;
	if (t->paired && t->paired[0]) {
		const char *from = t->paired_from ? t->paired_from : "given";

		if (!on_bus(pf, t->paired)) {
			t->verdict = GA_VERDICT_FAIL;
			out(t, "paired", "GPU %s (%s): GONE, not on the PCI bus", t->paired, from);
			add(verdict, sizeof(verdict), "the paired GPU %s is gone from the bus",
			    t->paired);
		} else if (strcmp(t->paired, t->gpu)) {
			if (t->verdict < GA_VERDICT_WARN)
				t->verdict = GA_VERDICT_WARN;
			out(t, "paired", "GPU %s (%s): DIFFERS from the rule", t->paired, from);
			add(verdict, sizeof(verdict), "paired with GPU %s, not the rule's",
			    t->paired);
		} else {
			out(t, "paired", "GPU %s (%s): the same", t->paired, from);
		}
	}
	if ((ngone = gone_gpus(pf, gone, sizeof(gone)))) {
		out(t, "gone", "%s", gone);
		if (t->verdict < GA_VERDICT_WARN)
			t->verdict = GA_VERDICT_WARN;
		if (!strstr(verdict, "is gone"))
			add(verdict, sizeof(verdict), "%d GPU%s gone from the bus", ngone,
			    ngone > 1 ? "s" : "");
	}
	if (skipped[0])
		out(t, "skipped", "%s", skipped);
	out(t, "pairs", "%s", pairs[0] ? pairs : "none");
	/* The verdict first: head -1 answers. */
	{
		char head[1024];
		size_t h = (size_t)snprintf(head, sizeof(head), "%-9s %s%s%s\n", "verdict",
					    ga_verdict_name(t->verdict), verdict[0] ? ": " : "",
					    verdict),
		       rest = strlen(t->text);

		if (h >= sizeof(head))
			h = sizeof(head) - 1;
		if (h + rest >= sizeof(t->text))
			rest = sizeof(t->text) - h - 1;
		memmove(t->text + h, t->text, rest);
		memcpy(t->text, head, h);
		t->text[h + rest] = 0;
	}
}
