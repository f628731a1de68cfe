// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * gpuasync/sim.h: the simulated card's controls (frame generator, pushing
 * one frame, fault injection, statistics, the last frame read out).  Each
 * checks that the device is a sim and takes only the model lock (s->lock,
 * see sim_core.h), so none waits for a backend op in progress.
 */
#include <errno.h>
#include <string.h>

#include "sim_core.h"

/* ---- gpuasync/sim.h --------------------------------------------------------- */

static int get_sim(struct ga_dev *dev, struct sim **s)
{
	if (!dev)
		return ga_err(-EINVAL, "sim: no device");
	*s = sim_of(dev);
	if (!*s)
		return ga_err(-ENOTSUP, "not a simulated device: sim controls do not apply");
	return 0;
}

/* get_sim() for the calls that also need an argument (@what names it). */
static int get_sim_arg(struct ga_dev *dev, const void *arg, const char *what, struct sim **s)
{
	int rc = get_sim(dev, s);

	if (rc)
		return rc;
	if (!arg)
		return ga_err(-EINVAL, "sim: NULL %s", what);
	return 0;
}

int ga_sim_gen_get(struct ga_dev *dev, struct ga_sim_gen *gen)
{
	struct sim *s = NULL;
	int rc = get_sim_arg(dev, gen, "generator settings", &s);

	if (rc)
		return rc;
	sim_lock(s);
	*gen = s->gen;
	pthread_mutex_unlock(&s->lock);
	return 0;
}

int ga_sim_gen_set(struct ga_dev *dev, const struct ga_sim_gen *gen)
{
	struct sim *s = NULL;
	int rc = get_sim_arg(dev, gen, "generator settings", &s);
	struct sim_replay *replay_ended;
	uint64_t t;

	if (rc)
		return rc;
	if (gen->size < 1 || gen->size > SIM_MAX_FRAME)
		return ga_err(-ERANGE, "sim: frame size %u out of range 1..%u", gen->size,
			      SIM_MAX_FRAME);
	if (gen->rate_hz > NSEC_PER_SEC_U64)
		return ga_err(-ERANGE, "sim: rate %llu above 1e9 frames per second",
			      (unsigned long long)gen->rate_hz);
	if ((unsigned int)gen->pattern > GA_PATTERN_LAST)
		return ga_err(-EINVAL, "sim: unknown pattern %d", (int)gen->pattern);
	rc = ga_pattern_size_ok(gen->pattern, gen->size);
	if (rc)
		return rc;

	sim_lock(s);
	rc = sim_replay_gen_set(s, &replay_ended);
	if (rc) {
		pthread_mutex_unlock(&s->lock);
		return rc;
	}
	t = ga_mono_ns();
	if (gen->running && !s->gen.running) {
		/* A new run: frame numbers (the pattern seed) restart at 0. */
		s->gen_seq = 0;
		s->gen_sent = false;
		s->gen_t0 = t;
		s->gen_n = 0;
	} else if (gen->rate_hz != s->gen.rate_hz) {
		s->gen_t0 = t;
		s->gen_n = 0;
	}
	if (!gen->running)
		ga_simdev_stall_end(s, t);
	s->gen = *gen;
	ga_simdev_kick(s);
	pthread_mutex_unlock(&s->lock);
	sim_replay_release(replay_ended);
	return 0;
}

int ga_sim_push(struct ga_dev *dev, const void *payload, uint32_t len, int timeout_ms)
{
	struct sim *s = NULL;
	int rc = get_sim(dev, &s);
	enum ga_model_push r;
	uint64_t t0, deadline;
	bool waited = false;

	if (rc)
		return rc;
	if (!payload || len == 0)
		return ga_err(-EINVAL, "sim: a frame needs at least one byte");
	if (len > SIM_MAX_FRAME)
		return ga_err(-ERANGE, "sim: frame of %u bytes above 1G", len);
	t0 = ga_mono_ns();
	deadline = t0 + (timeout_ms > 0 ? (uint64_t)timeout_ms * 1000000ull : 0);

	sim_lock(s);
	for (;;) {
		uint64_t t, w;
		struct timespec ts;

		ga_model_poll(&s->model); /* arms made through shared memory */
		r = ga_model_push(&s->model, payload, len, s->gen.first_user, s->gen.last_user);
		if (r != GA_PUSH_NO_BUFFER || s->stop)
			break;
		t = ga_mono_ns();
		if (t >= deadline)
			break;
		waited = true;
		/* Woken by the thread after it saw an arm; re-poll at least
		 * every poll interval for arms nobody announces. */
		w = t + SIM_POLL_BUSY_NS < deadline ? t + SIM_POLL_BUSY_NS : deadline;
		ts = sim_abs_ts(w);
		pthread_cond_timedwait(&s->changed, &s->lock, &ts);
	}
	if (waited || r == GA_PUSH_NO_BUFFER)
		s->st.stalled_ns += ga_mono_ns() - t0;
	if (r != GA_PUSH_NO_BUFFER)
		ga_simdev_account(s, r, false);
	ga_simdev_kick(s);
	pthread_mutex_unlock(&s->lock);
	if (r == GA_PUSH_NO_BUFFER)
		return ga_err(-EAGAIN,
			      "sim: no free buffer within %d ms (next write buffer not armed)",
			      timeout_ms);
	return 0;
}

const char *ga_sim_fault_name(enum ga_sim_fault f)
{
	switch (f) {
	case GA_FAULT_WRITE_ERROR:
		return "write_error";
	case GA_FAULT_WRITE_TIMEOUT:
		return "write_timeout";
	case GA_FAULT_READ_ERROR:
		return "read_error";
	case GA_FAULT_REG_IGNORED:
		return "register_ignored";
	case GA_FAULT_PULSE_GAP:
		return "pulse_gap";
	case GA_FAULT_PULSE_DUPLICATE:
		return "pulse_duplicate";
	case GA_FAULT_BATCH_TOO_SHORT:
		return "batch_too_short";
	case GA_FAULT_BATCH_ZERO_SIZE:
		return "batch_zero_size";
	case GA_FAULT_BATCH_CORRUPT:
		return "batch_corrupt";
	case GA_FAULT_BATCH_OVERFLOW:
		return "batch_overflow";
	default:
		return "unknown";
	}
}

int ga_sim_link_set(struct ga_dev *dev, bool up)
{
	struct sim *s = NULL;
	int rc = get_sim(dev, &s);

	if (rc)
		return rc;
	atomic_store(&s->link_down, !up);
	return 0;
}

/* The SysMon model of a card that has one (get_sim first). */
static int sim_sysmon(struct sim *s)
{
	if (!s->has_sysmon)
		return ga_err(-ENODEV, "sim: no SysMon on this card (its memory-map version is 0, "
				       "or newer than known: spec memory_map=)");
	return 0;
}

static int sensor_arg(enum ga_sysmon_sensor sensor)
{
	if ((unsigned int)sensor >= GA_SYSMON_SENSOR_COUNT)
		return ga_err(-EINVAL, "sim: no SysMon sensor %d", (int)sensor);
	return 0;
}

int ga_sim_sysmon(struct ga_dev *dev, enum ga_sysmon_sensor sensor, int32_t *milli)
{
	struct sim *s = NULL;
	int rc = get_sim_arg(dev, milli, "sysmon", &s);

	if (rc || (rc = sensor_arg(sensor)) || (rc = sim_sysmon(s)))
		return rc;
	sim_lock(s);
	*milli = ga_sysmon_get_milli(&s->sysmon, sensor);
	pthread_mutex_unlock(&s->lock);
	return 0;
}

int ga_sim_sysmon_range(struct ga_dev *dev, enum ga_sysmon_sensor sensor, int32_t *min,
			int32_t *max)
{
	struct sim *s = NULL;
	int rc = get_sim_arg(dev, min && max ? min : NULL, "range", &s);
	enum ga_sysmon_kind k;

	if (rc || (rc = sensor_arg(sensor)) || (rc = sim_sysmon(s)))
		return rc;
	/* the family is fixed at open: no lock */
	k = ga_sysmon_sensors[sensor].kind;
	*min = ga_sysmon_to_milli(s->sysmon.family, k, 0);
	*max = ga_sysmon_to_milli(s->sysmon.family, k, 0xffff);
	return 0;
}

int ga_sim_sysmon_set(struct ga_dev *dev, enum ga_sysmon_sensor sensor, int32_t milli)
{
	struct sim *s = NULL;
	int rc = get_sim(dev, &s);

	if (rc || (rc = sensor_arg(sensor)) || (rc = sim_sysmon(s)))
		return rc;
	sim_lock(s);
	rc = ga_sysmon_set_milli(&s->sysmon, sensor, milli);
	pthread_mutex_unlock(&s->lock);
	if (rc) {
		enum ga_sysmon_family f = s->sysmon.family;
		enum ga_sysmon_kind k = ga_sysmon_sensors[sensor].kind;
		const char *unit = k == GA_SYSMON_MC ? "C" : "V";

		return ga_err(rc,
			      "sim: %s %.3f %s is outside what %s's 16-bit code holds "
			      "(%.3f to %.3f %s)",
			      ga_sysmon_sensors[sensor].label, milli / 1000.0, unit,
			      ga_sysmon_families[f].primitive, ga_sysmon_to_milli(f, k, 0) / 1000.0,
			      ga_sysmon_to_milli(f, k, 0xffff) / 1000.0, unit);
	}
	return 0;
}

int ga_sim_temperature(struct ga_dev *dev, int32_t *mC)
{
	return ga_sim_sysmon(dev, GA_SYSMON_TEMP, mC);
}

int ga_sim_temperature_range(struct ga_dev *dev, int32_t *min_mC, int32_t *max_mC)
{
	return ga_sim_sysmon_range(dev, GA_SYSMON_TEMP, min_mC, max_mC);
}

int ga_sim_temperature_set(struct ga_dev *dev, int32_t mC)
{
	return ga_sim_sysmon_set(dev, GA_SYSMON_TEMP, mC);
}

int ga_sim_inject(struct ga_dev *dev, enum ga_sim_fault fault, uint32_t count, uint32_t code)
{
	struct sim *s = NULL;
	int rc = get_sim(dev, &s);

	if (rc)
		return rc;
	switch (fault) {
	case GA_FAULT_WRITE_ERROR:
		if (code > 3)
			return ga_err(-ERANGE,
				      "sim: AXI write error code %u: must be 1..3 "
				      "(0 = SLVERR, 2)",
				      code);
		break;
	case GA_FAULT_READ_ERROR:
		if (code > 7)
			return ga_err(-ERANGE,
				      "sim: AXI read error code %u: must be 1..7 "
				      "(0 = SLVERR, 2)",
				      code);
		break;
	case GA_FAULT_WRITE_TIMEOUT:
	case GA_FAULT_REG_IGNORED:
	case GA_FAULT_PULSE_GAP:
	case GA_FAULT_PULSE_DUPLICATE:
	case GA_FAULT_BATCH_TOO_SHORT:
	case GA_FAULT_BATCH_ZERO_SIZE:
	case GA_FAULT_BATCH_CORRUPT:
	case GA_FAULT_BATCH_OVERFLOW:
		break;
	default:
		return ga_err(-EINVAL, "sim: unknown fault %d", (int)fault);
	}
	if (code == 0)
		code = 2;
	sim_lock(s);
	switch (fault) {
	case GA_FAULT_WRITE_ERROR:
		s->model.faults.write_error = count;
		s->model.faults.write_error_code = code;
		break;
	case GA_FAULT_WRITE_TIMEOUT:
		s->model.faults.write_timeout = count;
		break;
	case GA_FAULT_REG_IGNORED:
		s->reg_ignored = count;
		break;
	case GA_FAULT_PULSE_GAP:
		s->seq_gap = count;
		break;
	case GA_FAULT_PULSE_DUPLICATE:
		s->seq_dup = count;
		break;
	case GA_FAULT_BATCH_TOO_SHORT:
	case GA_FAULT_BATCH_ZERO_SIZE:
	case GA_FAULT_BATCH_CORRUPT:
	case GA_FAULT_BATCH_OVERFLOW:
		s->batch_fault[fault - GA_FAULT_BATCH_TOO_SHORT] = count;
		break;
	default:
		s->model.faults.read_error = count;
		s->model.faults.read_error_code = code;
		break;
	}
	pthread_mutex_unlock(&s->lock);
	return 0;
}

/* CPU time of the card's thread, from its CPU-time clock (0 if unknown). */
static uint64_t thread_cpu_ns(struct sim *s)
{
	struct timespec ts;
	clockid_t cid;

	if (!s->thread_started || pthread_getcpuclockid(s->thread, &cid) || clock_gettime(cid, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC_U64 + (uint64_t)ts.tv_nsec;
}

int ga_sim_stats(struct ga_dev *dev, struct ga_sim_stats *st)
{
	struct sim *s = NULL;
	int rc = get_sim_arg(dev, st, "stats", &s);

	if (rc)
		return rc;
	sim_lock(s);
	if (s->crc_dirty) {
		s->st.last_read_crc = ga_crc32(0, s->last_read, s->last_read_len);
		s->crc_dirty = false;
	}
	*st = s->st;
	if (s->stalled)
		st->stalled_ns += ga_mono_ns() - s->stall_t0;
	st->ctl_lost = __atomic_load_n(&s->model.ctl.lost, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&s->lock);
	st->ctl_stores = atomic_load(&s->trapped_stores);
	st->cpu_ns = thread_cpu_ns(s);
	return 0;
}

int ga_sim_last_read(struct ga_dev *dev, void *dst, uint32_t len, uint32_t *got)
{
	struct sim *s = NULL;
	int rc = get_sim(dev, &s);
	uint32_t n;

	if (rc)
		return rc;
	if (!dst && len)
		return ga_err(-EINVAL, "sim: NULL destination");
	sim_lock(s);
	n = s->last_read_len < len ? s->last_read_len : len;
	if (n)
		memcpy(dst, s->last_read, n);
	if (got)
		*got = len ? n : s->last_read_len;
	pthread_mutex_unlock(&s->lock);
	return 0;
}
