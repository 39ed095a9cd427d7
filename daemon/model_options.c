/* model_options: a REGISTER's options within the config (model_options.h). */
#include <errno.h>
#include <stdio.h>

#include "model_options.h"

static const char *const precision_names[] = {
	[GSP_WIRE_PRECISION_FLOAT32] = "float32",
	[GSP_WIRE_PRECISION_FLOAT16] = "float16",
	[GSP_WIRE_PRECISION_BFLOAT16] = "bfloat16",
};

/* What the daemon does not do, whatever its config says. */
static int unsupported(const gsp_api_register_opts *o, char *err, size_t err_len)
{
	if ((o->set & GSP_REG_ITERATIONS) && o->power_iterations != 1) {
		snprintf(err, err_len, "%u power iterations per STEP: not implemented "
			 "(one gossip round per STEP; ask 1 or leave it unset)",
			 (unsigned)o->power_iterations);
		return -EOPNOTSUPP;
	}
	if ((o->set & GSP_REG_DTYPE) && !gsp_dtype_name((gsp_dtype)o->dtype)) {
		snprintf(err, err_len, "dtype %u is unknown: this daemon knows float32 "
			 "(0), float16 (1) and bfloat16 (2)", (unsigned)o->dtype);
		return -EOPNOTSUPP;
	}
	if ((o->set & GSP_REG_PRECISION) &&
	    o->precision >= sizeof(precision_names) / sizeof(*precision_names)) {
		snprintf(err, err_len, "wire precision %u is unknown: this daemon knows "
			 "float32 (0), float16 (1) and bfloat16 (2)", (unsigned)o->precision);
		return -EOPNOTSUPP;
	}
	return 0;
}

/* The wire precision asked into c (resolved method): 16-bit factors are
 * powergossip's only. */
static int wire_precision(const gsp_api_register_opts *o, gsp_config *c,
			  char *err, size_t err_len)
{
	static const gsp_dtype wire_dtype[] = {
		[GSP_WIRE_PRECISION_FLOAT32] = GSP_DTYPE_FLOAT32,
		[GSP_WIRE_PRECISION_FLOAT16] = GSP_DTYPE_FLOAT16,
		[GSP_WIRE_PRECISION_BFLOAT16] = GSP_DTYPE_BFLOAT16,
	};
	if (!(o->set & GSP_REG_PRECISION)) {
		/* The config's WirePrecision is powergossip's default: a model of
		 * another method sends float32. */
		if (c->method != GSP_METHOD_POWERGOSSIP)
			c->wire = GSP_DTYPE_FLOAT32;
		return 0;
	}
	c->wire = wire_dtype[o->precision];
	if (c->wire != GSP_DTYPE_FLOAT32 && c->method != GSP_METHOD_POWERGOSSIP) {
		snprintf(err, err_len, "wire precision %s applies to powergossip only, "
			 "not %s (its messages are float32)",
			 precision_names[o->precision], gsp_method_name(c->method));
		return -EOPNOTSUPP;
	}
	return 0;
}

int model_options_resolve(const gsp_daemon_config *cfg,
			  const gsp_api_register_opts *asked, gsp_config *ret,
			  char *err, size_t err_len)
{
	gsp_config c = cfg->engine;
	int r = unsupported(asked, err, err_len);
	if (r)
		return r;
	if (asked->set & GSP_REG_METHOD)
		c.method = (gsp_method)asked->method;
	if (asked->set & GSP_REG_GAMMA)
		c.gamma = asked->gamma;
	const char *method = gsp_method_name(c.method);
	r = wire_precision(asked, &c, err, err_len);
	if (r)
		return r;
	bool choco = c.method >= GSP_METHOD_CHOCO_TOPK;
	if (asked->set & GSP_REG_RANK) {
		if (c.method != GSP_METHOD_POWERGOSSIP) {
			snprintf(err, err_len, "a rank applies to powergossip only, not %s",
				 method);
			return -EOPNOTSUPP;
		}
		if (asked->rank > cfg->max_rank) {
			snprintf(err, err_len, "rank %u is above this daemon's MaxRank %u",
				 (unsigned)asked->rank, cfg->max_rank);
			return -ERANGE;
		}
		c.rank = asked->rank;
	}
	if (choco && cfg->avg_finite) {
		snprintf(err, err_len, "method %s: this daemon's AverageSchedule runs exact "
			 "rounds on single edges, and a choco method's rounds need every edge",
			 method);
		return -EOPNOTSUPP;
	}
	if (choco && cfg->gamma_auto && !(asked->set & GSP_REG_GAMMA)) {
		snprintf(err, err_len, "method %s needs a gamma chosen for its compression: "
			 "this daemon's Gamma = auto is exact gossip's step", method);
		return -EOPNOTSUPP;
	}
	*ret = c;
	return 0;
}

gsp_dtype model_options_dtype(const gsp_api_register_opts *asked)
{
	return asked->set & GSP_REG_DTYPE ? (gsp_dtype)asked->dtype : GSP_DTYPE_FLOAT32;
}
