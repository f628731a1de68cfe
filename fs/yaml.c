// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * settings.yaml and state.yaml: the card's settings in the YAML shape rogue's
 * pyrogue writes and reads (SaveConfig, SaveState, LoadConfig), for the
 * AxiPcieCore.AxiGpuAsyncCore subtree of a standard tree (root "Root").
 *
 *   $ cat /mnt/gpuasync/settings.yaml
 *   Root:
 *     AxiPcieCore:
 *       AxiGpuAsyncCore:
 *         AxiReadCache: 0x0
 *         AxiWriteCache: 0x0
 *         AxisDeMuxSelect: GPU_path
 *   $ cat full-tree.yaml > /mnt/gpuasync/settings.yaml     # as LoadConfig
 *
 * Names are the register table's pyrogue column; values are shown as
 * pyrogue displays them (pyrogue_disp[] below: enum names, hex where
 * pyrogue has no format of its own, True/False, else decimal).
 * settings.yaml holds the settings (settings.c), state.yaml every variable
 * with a pyrogue name that can be read (pyrogue's RO ones too; commands and
 * per-buffer Buffer[i] children are not), as SaveState.
 *
 * AxiReadCache and AxiWriteCache are RO in pyrogue ("the kernel driver
 * writes them") but settings here: the firmware makes them read-write and
 * neither driver programs them, so nobody else would.  They are exported,
 * and pyrogue's LoadConfig passes RO entries over without a word, so a
 * file written here still loads there; a pyrogue file lacks them, so
 * applying one leaves them as they are.
 *
 * What one open writes is one text (tree.c), applied at close as
 * LoadConfig does: every entry of the subtree is staged, then written,
 * read back and rolled back on failure as one transaction (settings.c).
 * A key met again takes the later value, so `cat base.yaml site.yaml >
 * settings.yaml` applies site.yaml over base.yaml, several files
 * overlaying in order, all or nothing, as LoadConfig of a list.  Each
 * write is checked as it arrives (c->check_only: parsed, nothing staged
 * or noted).  Entries outside the subtree,
 * and names the subtree does not have, are skipped with one `errors` line
 * each (pyrogue logs "Entry not found" and goes on); pyrogue's read-only
 * variables (a state dump loaded back) are passed over silently, as its
 * mode filter does.  A value repeated later in a file overrides the
 * earlier one, as in pyrogue's loader.  The YAML understood is pyrogue's
 * block style: mappings of "key: value", plain or quoted scalars, "{}",
 * comments, a leading "---", dotted paths as top-level keys.  Inside the
 * subtree anything else (lists, flow collections, anchors, tags, block
 * scalars, tabs) is refused whole with EINVAL and an errors line naming
 * the line; skipped nodes are not looked into.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "fs.h"

#define YAML_ROOT  "Root"
#define YAML_CORE  "AxiPcieCore"
#define YAML_DEPTH 8 /* deepest key path followed */

static const char *const bool_names[2] = {"False", "True"};

/* How pyrogue shows row @id (the table's py_disp; GA_PY_FORMAT resolved
 * from the row's format, pr.Bool's False/True for a bool), and for
 * GA_PY_ENUM the names of 0 and 1 in *@names. */
static enum ga_py_disp disp_of(enum ga_reg_id id, const char *const **names)
{
	*names = ga_regs[id].py_names;
	if (ga_regs[id].py_disp != GA_PY_FORMAT)
		return ga_regs[id].py_disp;
	switch (ga_regs[id].format) {
	case GA_FMT_HEX:
		return GA_PY_HEX;
	case GA_FMT_BOOL:
		*names = bool_names; /* pr.Bool: False, True */
		return GA_PY_ENUM;
	default:
		return GA_PY_DEC;
	}
}


/* The row's pyrogue name below AxiGpuAsyncCore ("RxFrameCnt",
 * "GpuIbAxisMon.Ch[0].FrameCnt"), or NULL. */
static const char *core_name(enum ga_reg_id id)
{
	static const char pre[] = "AxiGpuAsyncCore.";
	const char *py = ga_regs[id].pyrogue;

	return strncmp(py, pre, sizeof(pre) - 1) ? NULL : py + sizeof(pre) - 1;
}

/* Is row @id in the YAML of this card: settings only, or every readable
 * variable pyrogue has (scalars, and per-buffer rows pyrogue has for
 * buffer 0 alone)? */
static bool in_yaml(const struct fs *fs, enum ga_reg_id id, bool state)
{
	const struct ga_reg *r = &ga_regs[id];
	const char *py = core_name(id);

	if (!py || strstr(py, "[i]") || !ga_reg_present(id, fs->info.layout, fs->info.version))
		return false;
	if (!state)
		return fs_is_setting(fs, id);
	return r->access != GA_WO; /* commands are not saved */
}

/* ---- export ------------------------------------------------------------- */

/* @name's value, then for GA_PY_MBPS the LinkVariable pyrogue derives from
 * it, on its own line at @indent. */
static int put_value(struct fs *fs, struct strbuf *sb, enum ga_reg_id id, int indent,
		     const char *name)
{
	const char *const *names = bool_names;
	enum ga_py_disp d = disp_of(id, &names);
	uint64_t v;
	int ret = ga_reg_read64(fs->dev, id, 0, &v);

	if (ret < 0)
		return ret;
	if (d == GA_PY_ENUM && v < 2)
		return sb_printf(sb, "%s\n", names[v]) ? -ENOMEM : 0;
	if (d == GA_PY_MBPS)
		return sb_printf(sb, "0x%llx\n%*s%s: %.1f\n", (unsigned long long)v, indent, "",
				 name + strlen("Raw"), (double)v * 8e-6) ?
			       -ENOMEM :
			       0;
	if (d == GA_PY_HEX)
		return sb_printf(sb, "0x%llx\n", (unsigned long long)v) ? -ENOMEM : 0;
	return sb_printf(sb, "%llu\n", (unsigned long long)v) ? -ENOMEM : 0;
}

/* Rows come in table order, which keeps a device's variables together
 * (the two stream monitors): a key line for each level that differs from
 * the row before, then the variable. */
static int show_yaml(struct fs_ctx *c, struct strbuf *sb, bool state)
{
	struct fs *fs = c->fs;
	char prev[128] = "";
	int ret = fs_settings_link_check(fs);

	if (ret < 0)
		return ret;
	sb_printf(sb,
		  "# gpuasyncfs %s of %s: GpuAsyncCore firmware version %u, layout %s\n"
		  "# pyrogue's %s shape, below a root named " YAML_ROOT "%s\n" YAML_ROOT
		  ":\n  " YAML_CORE ":\n    AxiGpuAsyncCore:\n",
		  state ? "state" : "settings", fs->cfg.device, fs->info.version,
		  ga_layout_name(fs->info.layout), state ? "SaveState" : "SaveConfig",
		  state ? "" : "; restore: cat FILE > MOUNTPOINT/settings.yaml");
	for (int id = 0; id < GA_REG_COUNT && !ret; id++) {
		const char *py = core_name((enum ga_reg_id)id);
		const char *p = py, *q = prev;
		unsigned int depth = 0;

		if (!in_yaml(fs, (enum ga_reg_id)id, state))
			continue;
		/* levels shared with the previous row are already open */
		while (strchr(p, '.')) {
			size_t n = (size_t)(strchr(p, '.') - p);

			if (q && !strncmp(p, q, n) && q[n] == '.') {
				q += n + 1;
			} else {
				q = NULL;
				sb_printf(sb, "%*s%.*s:\n", 6 + 2 * depth, "", (int)n, p);
			}
			p += n + 1;
			depth++;
		}
		snprintf(prev, sizeof(prev), "%s", py);
		sb_printf(sb, "%*s%s: ", 6 + 2 * depth, "", p);
		ret = put_value(fs, sb, (enum ga_reg_id)id, 6 + 2 * depth, p);
	}
	if (ret < 0)
		return ret;
	return sb->oom ? -ENOMEM : 0;
}

int fs_show_settings_yaml(struct fs_ctx *c, struct strbuf *sb)
{
	return show_yaml(c, sb, false);
}

int fs_show_state_yaml(struct fs_ctx *c, struct strbuf *sb)
{
	return show_yaml(c, sb, true);
}

/* ---- import ------------------------------------------------------------- */

/* A parse in progress: the staged settings and the skipped nodes' notes. */
struct load {
	struct fs *fs;
	struct fs_staged st[GA_REG_COUNT];
	unsigned int n;
	char **notes;
	unsigned int nnotes;
};

static void note_skip(struct load *ld, unsigned int line, char *const *path, unsigned int depth,
		      const char *why)
{
	char p[256] = "", **grown;
	size_t off = 0;

	for (unsigned int i = 0; i < depth && off < sizeof(p); i++)
		off += (size_t)snprintf(p + off, sizeof(p) - off, "%s%s", i ? "." : "", path[i]);
	grown = realloc(ld->notes, sizeof(*grown) * (ld->nnotes + 1));
	if (!grown)
		return;
	ld->notes = grown;
	if (asprintf(&ld->notes[ld->nnotes], "line %u: %s skipped: %s", line, p, why) >= 0)
		ld->nnotes++;
}

/* "Buffer[12]" -> "Buffer[i]": pyrogue's per-buffer children match the
 * table's "[i]" names. */
static void generic_index(const char *in, char *out, size_t len)
{
	size_t o = 0;

	while (*in && o + 1 < len) {
		if (in[0] == '[' && isdigit((unsigned char)in[1])) {
			const char *e = in + 1;

			while (isdigit((unsigned char)*e))
				e++;
			if (*e == ']' && o + 3 < len) {
				memcpy(out + o, "[i]", 3);
				o += 3;
				in = e + 1;
				continue;
			}
		}
		out[o++] = *in++;
	}
	out[o] = '\0';
}

/* Is @gen the generic name of a GA_PY_MBPS row's LinkVariable (the last
 * component less "Raw") equal to @want? */
static bool link_name_is(enum ga_reg_id id, const char *gen, const char *want)
{
	const char *const *names;
	const char *last = strrchr(gen, '.');
	size_t head;

	if (disp_of(id, &names) != GA_PY_MBPS || !last || strncmp(last + 1, "Raw", 3))
		return false;
	head = (size_t)(last + 1 - gen);
	return !strncmp(gen, want, head) && !strcmp(want + head, last + 4);
}

/* Does some row's pyrogue name start with @path below AxiGpuAsyncCore
 * (a device or a variable of the subtree)?  Sets *@id when it names a
 * row exactly, or the LinkVariable pyrogue derives from it. */
static bool core_known(const char *path, int *id)
{
	char want[160];
	size_t n;

	generic_index(path, want, sizeof(want));
	n = strlen(want);
	*id = -1;
	for (int i = 0; i < GA_REG_COUNT; i++) {
		const char *py = core_name((enum ga_reg_id)i);
		char gen[160];

		if (!py)
			continue;
		generic_index(py, gen, sizeof(gen));
		if (!strcmp(gen, want) || link_name_is((enum ga_reg_id)i, gen, want)) {
			*id = i;
			return true;
		}
		if (!strncmp(gen, want, n) && gen[n] == '.')
			return true;
	}
	return false;
}

/* A scalar as written: plain, 'single' ('' is a quote) or "double" (no
 * escapes), with a trailing comment removed.  0, or -EINVAL for what this
 * reader does not understand. */
static int scalar(const char *s, char *out, size_t len)
{
	size_t o = 0;

	if (*s == '\'' || *s == '"') {
		char q = *s++;

		for (;; s++) {
			if (!*s)
				return -EINVAL; /* unterminated */
			if (*s == q) {
				if (q == '\'' && s[1] == '\'') {
					s++;
				} else {
					s++;
					break;
				}
			} else if (q == '"' && *s == '\\') {
				return -EINVAL;
			}
			if (o + 1 >= len)
				return -EINVAL;
			out[o++] = *s;
		}
		while (*s == ' ')
			s++;
		if (*s && *s != '#')
			return -EINVAL;
		out[o] = '\0';
		return 0;
	}
	if (strchr("[]{}&*!|>%@`-", *s) && !(s[0] == '-' && isdigit((unsigned char)s[1])))
		return -EINVAL; /* flow, anchor, alias, tag, block scalar, list */
	for (; *s && !(*s == '#' && o && out[o - 1] == ' '); s++) {
		if (o + 1 >= len)
			return -EINVAL;
		out[o++] = *s;
	}
	while (o && out[o - 1] == ' ')
		o--;
	out[o] = '\0';
	return 0;
}

/* Stage @val for row @id (a setting) from line @line; later lines win. */
static int stage(struct load *ld, int id, const char *val, unsigned int line)
{
	struct fs *fs = ld->fs;
	const char *const *names = bool_names;
	enum ga_py_disp d = disp_of((enum ga_reg_id)id, &names);
	uint32_t max = ga_reg_field_max((enum ga_reg_id)id, fs->info.layout);
	uint64_t v = 0;
	int ret;

	if (d == GA_PY_ENUM) {
		if (!strcmp(val, names[0]) || (names == bool_names && !strcmp(val, "false"))) {
			v = 0;
		} else if (!strcmp(val, names[1]) ||
			   (names == bool_names && !strcmp(val, "true"))) {
			v = 1;
		} else {
			return fs_err(-EINVAL, "settings.yaml line %u: %s: '%s' is not %s or %s",
				      line, ga_regs[id].pyrogue, val, names[0], names[1]);
		}
	} else {
		ret = fs_parse_u64(val, strlen(val), max, ga_regs[id].flags & GA_F_BYTES, &v);
		if (ret < 0)
			return fs_err(ret, "settings.yaml line %u: %s: '%s': %s", line,
				      ga_regs[id].pyrogue, val,
				      ret == -ERANGE ? "out of range for the field"
						     : "not a number");
	}
	for (unsigned int i = 0; i < ld->n; i++)
		if (ld->st[i].id == (enum ga_reg_id)id) {
			ld->st[i].value = (uint32_t)v; /* overlay: the later value */
			ld->st[i].line = line;
			return 0;
		}
	ld->st[ld->n++] =
		(struct fs_staged){.id = (enum ga_reg_id)id, .value = (uint32_t)v, .line = line};
	return 0;
}

/*
 * Where @path (depth components) lies: 1 inside or on the way to the
 * subtree, 0 outside it.  *@id is the row it names exactly (a variable),
 * else -1.
 */
static int locate(char *const *path, unsigned int depth, int *id)
{
	char rest[160] = "";
	size_t off = 0;

	*id = -1;
	if (depth >= 2 && strcmp(path[1], YAML_CORE))
		return 0;
	if (depth >= 3 && strcmp(path[2], "AxiGpuAsyncCore"))
		return 0;
	if (depth < 4)
		return 1;
	for (unsigned int i = 3; i < depth && off < sizeof(rest); i++)
		off += (size_t)snprintf(rest + off, sizeof(rest) - off, "%s%s", i > 3 ? "." : "",
					path[i]);
	return core_known(rest, id) ? 1 : 0;
}

/* A construct this reader does not take: refused inside the subtree (or
 * on the way to it), skipped with its node elsewhere. */
static int not_understood(char *const *path, unsigned int depth, const int *indent,
			  unsigned int lineno, const char *s, const char *what, int *skip_indent)
{
	int id;

	if (depth == 0 || locate(path, depth, &id))
		return fs_err(-EINVAL, "settings.yaml line %u: '%.60s' %s", lineno, s, what);
	*skip_indent = indent[depth - 1];
	return 0;
}

static int parse(struct load *ld, const char *buf, size_t len)
{
	char *text = malloc(len + 1), *line, *next;
	char *path[YAML_DEPTH];
	int indent[YAML_DEPTH];
	unsigned int depth = 0, lineno = 0;
	int skip_indent = -1, leaf_indent = -1, ret = 0;
	bool content = false;

	if (!text)
		return -ENOMEM;
	if (memchr(buf, '\0', len)) {
		free(text);
		return fs_err(-EINVAL, "settings.yaml: contains a NUL byte");
	}
	memcpy(text, buf, len);
	text[len] = '\0';
	for (line = text; line && !ret; line = next) {
		char *s = line, *key, *colon, *val, val_text[128];
		unsigned int keydepth;
		size_t l;
		int ind, id;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		lineno++;
		l = strlen(line);
		if (l && line[l - 1] == '\r')
			line[l - 1] = '\0';
		for (ind = 0; *s == ' '; s++)
			ind++;
		if (skip_indent >= 0 && (!*s || *s == '#' || ind > skip_indent))
			continue; /* inside a skipped node: not looked into */
		skip_indent = -1;
		if (*s == '\t') {
			ret = fs_err(-EINVAL, "settings.yaml line %u: a tab in the indentation",
				     lineno);
			break;
		}
		if (!*s || *s == '#')
			continue;
		if (ind == 0 && !strncmp(s, "---", 3) && (!s[3] || s[3] == ' ')) {
			if (content)
				ret = fs_err(
					-EINVAL,
					"settings.yaml line %u: a second YAML document "
					"(several files overlay when concatenated without '---')",
					lineno);
			continue;
		}
		if (ind == 0 && (*s == '%' || !strncmp(s, "...", 3))) {
			ret = fs_err(-EINVAL, "settings.yaml line %u: '%.60s' not understood",
				     lineno, s);
			break;
		}
		content = true;
		if (leaf_indent >= 0 && ind > leaf_indent) {
			ret = fs_err(-EINVAL,
				     "settings.yaml line %u: indented below a key that has a value",
				     lineno);
			break;
		}
		leaf_indent = -1;
		/* close the levels this line is not inside */
		while (depth && indent[depth - 1] >= ind)
			depth--;
		/* key: plain up to ': ' (or ':' at the end), or quoted */
		key = s;
		if (*s == '\'' || *s == '"') {
			char *e = strchr(s + 1, *s);

			if (!e || e[1] != ':' || (e[2] && e[2] != ' ')) {
				ret = fs_err(-EINVAL, "settings.yaml line %u: key not understood",
					     lineno);
				break;
			}
			key = s + 1;
			*e = '\0';
			colon = e + 1;
		} else if (strchr("-?[]{}&*!|>%@`", *s)) {
			ret = not_understood(path, depth, indent, lineno, s,
					     "not understood (pyrogue's block mappings only)",
					     &skip_indent);
			continue;
		} else {
			for (colon = s;
			     *colon && !(colon[0] == ':' && (!colon[1] || colon[1] == ' '));
			     colon++)
				;
			if (!*colon) {
				ret = not_understood(path, depth, indent, lineno, s,
						     "is not 'name: value'", &skip_indent);
				continue;
			}
		}
		*colon = '\0';
		val = colon + 1;
		while (*val == ' ')
			val++;
		/* the key's components: dotted paths at the top level (pyrogue's
		 * root takes "Root.AxiPcieCore.AxiGpuAsyncCore" as a key) */
		for (keydepth = depth; key && !ret;) {
			char *dot = depth == 0 ? strchr(key, '.') : NULL;

			if (dot)
				*dot = '\0';
			if (keydepth >= YAML_DEPTH || !*key)
				ret = fs_err(-EINVAL, "settings.yaml line %u: key not understood",
					     lineno);
			path[keydepth] = key;
			indent[keydepth++] = ind;
			key = dot ? dot + 1 : NULL;
		}
		if (ret)
			break;
		if (!locate(path, keydepth, &id)) {
			note_skip(ld, lineno, path, keydepth,
				  keydepth > 3
					  ? "no such AxiGpuAsyncCore variable here"
					  : "not part of the AxiPcieCore.AxiGpuAsyncCore subtree");
			skip_indent = ind;
			continue;
		}
		if (!*val || *val == '#') { /* a mapping follows (or nothing) */
			depth = keydepth;
			continue;
		}
		leaf_indent = ind;
		if (!strcmp(val, "{}") || !strncmp(val, "{} ", 3))
			continue; /* an empty device */
		if (keydepth < 4) {
			ret = fs_err(-EINVAL,
				     "settings.yaml line %u: %s is a device, not a variable",
				     lineno, path[keydepth - 1]);
			break;
		}
		if (id >= 0 && ga_reg_is_setting((enum ga_reg_id)id) &&
		    !ga_reg_present((enum ga_reg_id)id, ld->fs->info.layout,
				    ld->fs->info.version)) {
			note_skip(ld, lineno, path, keydepth, "not part of this firmware version");
			continue;
		}
		if (id < 0 || !fs_is_setting(ld->fs, (enum ga_reg_id)id))
			continue; /* pyrogue's RO variables and devices: passed over */
		if (scalar(val, val_text, sizeof(val_text)) < 0) {
			ret = fs_err(-EINVAL,
				     "settings.yaml line %u: %s: value '%.60s' not understood",
				     lineno, ga_regs[id].pyrogue, val);
			break;
		}
		ret = stage(ld, id, val_text, lineno);
	}
	free(text);
	return ret;
}

int fs_store_settings_yaml(struct fs_ctx *c, const char *buf, size_t len)
{
	struct load *ld = calloc(1, sizeof(*ld));
	int ret;

	if (!ld)
		return -ENOMEM;
	ld->fs = c->fs;
	ret = parse(ld, buf, len);
	if (ret == 0 && c->check_only) {
		ret = fs_settings_link_check(c->fs);
	} else if (ret == 0) {
		/* the file is understood: say what it skipped, then apply */
		for (unsigned int i = 0; i < ld->nnotes; i++)
			fs_error_add(c->fs, "settings.yaml", 0, ld->notes[i]);
		ret = fs_settings_commit(c->fs, ld->st, ld->n);
	}
	for (unsigned int i = 0; i < ld->nnotes; i++)
		free(ld->notes[i]);
	free(ld->notes);
	free(ld);
	return ret;
}

/* clang-format off */
const struct fs_node fs_yaml_rows[] = {
	{ .name = "settings.yaml", .parent = FS_D_ROOT, .dir = FS_D_NONE, .mode = 0644, .flags = FS_SIZED | FS_BIG_TEXT,
	  .show = fs_show_settings_yaml, .store = fs_store_settings_yaml, .reg = -1,
	  .doc = "the settings as pyrogue's SaveConfig YAML; writing pyrogue YAML applies our subtree whole or not at all" },
	{ .name = "state.yaml", .parent = FS_D_ROOT, .dir = FS_D_NONE, .mode = 0444, .flags = FS_SIZED,
	  .show = fs_show_state_yaml, .reg = -1,
	  .doc = "every AxiGpuAsyncCore variable as pyrogue's SaveState YAML (read-only ones too)" },
};
const unsigned int fs_yaml_nrows = sizeof(fs_yaml_rows) / sizeof(fs_yaml_rows[0]);
/* clang-format on */

/* -o settings=FILE: either shape, by the file's name.  Here rather than in
 * settings.c, which knows nothing of YAML. */
int fs_settings_apply_file(struct fs *fs, const char *path)
{
	struct fs_ctx c = {.fs = fs, .node = &fs_settings_rows[0]};
	size_t plen = strlen(path), n, max = FS_TEXT_MAX;
	/* pyrogue's YAML (settings.yaml) by its name, else ini */
	bool yaml = (plen > 5 && !strcmp(path + plen - 5, ".yaml")) ||
		    (plen > 4 && !strcmp(path + plen - 4, ".yml"));
	char *buf;
	struct stat st;
	FILE *f;
	int ret;
	/* O_NONBLOCK: a FIFO must not hang start-up before it is refused */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0)
		return fs_err(-errno, "settings file %s: %s", path, strerror(errno));
	/* a regular file, or /dev/null (1:3): nothing to apply */
	if (fstat(fd, &st) < 0 ||
	    !(S_ISREG(st.st_mode) || (S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3)))) {
		close(fd);
		return fs_err(-EINVAL,
			      "settings file %s: not a regular file (a FIFO or device is refused: "
			      "it could block start-up forever)",
			      path);
	}
	if (yaml)
		max = FS_WHOLE_WRITE;
	buf = malloc(max + 1);
	f = buf ? fdopen(fd, "r") : NULL;
	if (!f) {
		ret = buf ? -errno : -ENOMEM;
		free(buf);
		close(fd);
		return fs_err(ret, "settings file %s: %s", path, strerror(-ret));
	}
	n = fread(buf, 1, max + 1, f);
	if (ferror(f))
		ret = fs_err(-EIO, "settings file %s: read error", path);
	else if (n > max)
		ret = fs_err(-EFBIG, "settings file %s: more than %zu bytes", path, max);
	else if (yaml)
		ret = fs_store_settings_yaml(&c, buf, n);
	else
		ret = fs_store_settings(&c, buf, n);
	fclose(f);
	free(buf);
	return ret;
}
