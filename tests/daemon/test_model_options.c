/* Unit tests of model_options (daemon/model_options.h): a REGISTER's
 * options within the config's defaults and limits.  No options give the
 * config's settings; each option replaces its one setting; what is beyond
 * a limit or not implemented is refused with a reason that names it, and
 * the output is left untouched. */
#include <check.h>
#include <errno.h>
#include <string.h>

#include "model_options.h"

static gsp_daemon_config cfg;

static void setup(void)
{
	gsp_daemon_config_default(&cfg);
	cfg.engine.rank = 4;
	cfg.max_rank = 8;
	cfg.engine.gamma = 1.5f;
}

/* Resolves o; on a refusal checks the code, that ret was not written and
 * that the reason holds `says`. */
static int resolve(const gsp_api_register_opts *o, gsp_config *ret, int want,
		   const char *says)
{
	char err[256] = "";
	gsp_config out;
	memset(&out, 0xa5, sizeof(out));
	int r = model_options_resolve(&cfg, o, &out, err, sizeof(err));
	ck_assert_msg(r == want, "got %d (%s), want %d", r, err, want);
	if (r) {
		gsp_config untouched;
		memset(&untouched, 0xa5, sizeof(untouched));
		ck_assert_mem_eq(&out, &untouched, sizeof(out));
		ck_assert_msg(strstr(err, says), "'%s' lacks '%s'", err, says);
	} else if (ret) {
		*ret = out;
	}
	return r;
}

START_TEST(test_no_options_are_the_configs_settings)
{
	gsp_api_register_opts none = {0};
	gsp_config c;
	resolve(&none, &c, 0, NULL);
	ck_assert_int_eq(c.method, cfg.engine.method);
	ck_assert_uint_eq(c.rank, 4);
	ck_assert_float_eq(c.gamma, 1.5f);
	ck_assert(c.warm_start == cfg.engine.warm_start);
}
END_TEST

/* The config's WirePrecision is a powergossip model's default; a model
 * that asks another method sends float32 (its messages are float32). */
START_TEST(test_wire_precision_from_the_config)
{
	gsp_api_register_opts none = {0};
	gsp_api_register_opts exact = {.set = GSP_REG_METHOD, .method = GSP_METHOD_EXACT};
	gsp_config c;
	cfg.engine.wire = GSP_DTYPE_BFLOAT16;
	resolve(&none, &c, 0, NULL);
	ck_assert_int_eq(c.wire, GSP_DTYPE_BFLOAT16);
	resolve(&exact, &c, 0, NULL);
	ck_assert_int_eq(c.method, GSP_METHOD_EXACT);
	ck_assert_int_eq(c.wire, GSP_DTYPE_FLOAT32);
}
END_TEST

START_TEST(test_each_option_replaces_its_setting)
{
	gsp_api_register_opts o = {.set = GSP_REG_RANK, .rank = 2};
	gsp_config c;
	resolve(&o, &c, 0, NULL);
	ck_assert_uint_eq(c.rank, 2);
	ck_assert_float_eq(c.gamma, 1.5f);
	o = (gsp_api_register_opts){.set = GSP_REG_RANK, .rank = 8};   /* = MaxRank */
	resolve(&o, &c, 0, NULL);
	ck_assert_uint_eq(c.rank, 8);
	o = (gsp_api_register_opts){.set = GSP_REG_GAMMA, .gamma = 0.25f};
	resolve(&o, &c, 0, NULL);
	ck_assert_float_eq(c.gamma, 0.25f);
	ck_assert_uint_eq(c.rank, 4);
	o = (gsp_api_register_opts){.set = GSP_REG_METHOD,
				    .method = GSP_WIRE_METHOD_EXACT};
	resolve(&o, &c, 0, NULL);
	ck_assert_int_eq(c.method, GSP_METHOD_EXACT);
	/* The implemented values of the two options that have only one. */
	o = (gsp_api_register_opts){.set = GSP_REG_ITERATIONS | GSP_REG_PRECISION,
				    .power_iterations = 1,
				    .precision = GSP_WIRE_PRECISION_FLOAT32};
	resolve(&o, &c, 0, NULL);
	ck_assert_uint_eq(c.rank, 4);
	ck_assert_int_eq(c.wire, GSP_DTYPE_FLOAT32);
	/* 16-bit factors on the wire; float32 when not asked. */
	o = (gsp_api_register_opts){.set = GSP_REG_PRECISION,
				    .precision = GSP_WIRE_PRECISION_FLOAT16};
	resolve(&o, &c, 0, NULL);
	ck_assert_int_eq(c.wire, GSP_DTYPE_FLOAT16);
	o.precision = GSP_WIRE_PRECISION_BFLOAT16;
	resolve(&o, &c, 0, NULL);
	ck_assert_int_eq(c.wire, GSP_DTYPE_BFLOAT16);
	o = (gsp_api_register_opts){.set = GSP_REG_RANK, .rank = 2};
	resolve(&o, &c, 0, NULL);
	ck_assert_int_eq(c.wire, GSP_DTYPE_FLOAT32);
	/* The config's method exact, the trainer's powergossip at rank 2. */
	cfg.engine.method = GSP_METHOD_EXACT;
	o = (gsp_api_register_opts){.set = GSP_REG_METHOD | GSP_REG_RANK,
				    .method = GSP_WIRE_METHOD_POWERGOSSIP, .rank = 2};
	resolve(&o, &c, 0, NULL);
	ck_assert_int_eq(c.method, GSP_METHOD_POWERGOSSIP);
	ck_assert_uint_eq(c.rank, 2);
}
END_TEST

START_TEST(test_beyond_the_limits_is_refused_with_the_reason)
{
	gsp_api_register_opts o = {.set = GSP_REG_RANK, .rank = 9};
	resolve(&o, NULL, -ERANGE, "rank 9 is above this daemon's MaxRank 8");
	o.rank = 65535;
	resolve(&o, NULL, -ERANGE, "MaxRank 8");
	/* A rank where the method has none. */
	o = (gsp_api_register_opts){.set = GSP_REG_METHOD | GSP_REG_RANK,
				    .method = GSP_WIRE_METHOD_EXACT, .rank = 2};
	resolve(&o, NULL, -EOPNOTSUPP, "powergossip only, not exact");
}
END_TEST

START_TEST(test_what_is_not_implemented_is_refused)
{
	gsp_api_register_opts o = {.set = GSP_REG_ITERATIONS, .power_iterations = 2};
	resolve(&o, NULL, -EOPNOTSUPP, "2 power iterations per STEP: not implemented");
	o = (gsp_api_register_opts){.set = GSP_REG_PRECISION, .precision = 3};
	resolve(&o, NULL, -EOPNOTSUPP, "wire precision 3 is unknown");
	/* 16-bit factors are powergossip's: the config's method or the one
	 * asked. */
	o = (gsp_api_register_opts){.set = GSP_REG_METHOD | GSP_REG_PRECISION,
				    .method = GSP_WIRE_METHOD_EXACT,
				    .precision = GSP_WIRE_PRECISION_FLOAT16};
	resolve(&o, NULL, -EOPNOTSUPP, "wire precision float16 applies to powergossip "
		"only, not exact");
	o.method = GSP_WIRE_METHOD_CHOCO_SIGN;
	o.precision = GSP_WIRE_PRECISION_BFLOAT16;
	resolve(&o, NULL, -EOPNOTSUPP, "bfloat16 applies to powergossip only, not choco-sign");
	/* A dtype it does not know, named with those it knows. */
	o = (gsp_api_register_opts){.set = GSP_REG_DTYPE, .dtype = 3};
	resolve(&o, NULL, -EOPNOTSUPP, "dtype 3 is unknown: this daemon knows float32 "
		"(0), float16 (1) and bfloat16 (2)");
}
END_TEST

/* The parameters' dtype: float32 when not asked, else the one asked,
 * which the settings leave as they are. */
START_TEST(test_dtype_is_the_one_asked)
{
	gsp_api_register_opts o = {0};
	gsp_config c;
	ck_assert_int_eq(model_options_dtype(&o), GSP_DTYPE_FLOAT32);
	o = (gsp_api_register_opts){.set = GSP_REG_DTYPE, .dtype = GSP_WIRE_DTYPE_BFLOAT16};
	resolve(&o, &c, 0, NULL);
	ck_assert_int_eq(model_options_dtype(&o), GSP_DTYPE_BFLOAT16);
	ck_assert_int_eq(c.rank, cfg.engine.rank);
	o.dtype = GSP_WIRE_DTYPE_FLOAT16;
	ck_assert_int_eq(model_options_dtype(&o), GSP_DTYPE_FLOAT16);
}
END_TEST

START_TEST(test_choco_where_the_config_rules_it_out)
{
	gsp_api_register_opts o = {.set = GSP_REG_METHOD,
				   .method = GSP_WIRE_METHOD_CHOCO_TOPK};
	gsp_config c;
	resolve(&o, &c, 0, NULL);
	ck_assert_int_eq(c.method, GSP_METHOD_CHOCO_TOPK);
	cfg.avg_finite = true;
	resolve(&o, NULL, -EOPNOTSUPP, "AverageSchedule");
	cfg.avg_finite = false;
	cfg.gamma_auto = true;
	resolve(&o, NULL, -EOPNOTSUPP, "Gamma = auto");
	o.set |= GSP_REG_GAMMA;
	o.gamma = 0.1f;
	resolve(&o, &c, 0, NULL);
	ck_assert_float_eq(c.gamma, 0.1f);
}
END_TEST

static Suite *model_options_suite(void)
{
	Suite *s = suite_create("model options");
	TCase *tc = tcase_create("resolve");
	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, test_no_options_are_the_configs_settings);
	tcase_add_test(tc, test_wire_precision_from_the_config);
	tcase_add_test(tc, test_each_option_replaces_its_setting);
	tcase_add_test(tc, test_beyond_the_limits_is_refused_with_the_reason);
	tcase_add_test(tc, test_what_is_not_implemented_is_refused);
	tcase_add_test(tc, test_dtype_is_the_one_asked);
	tcase_add_test(tc, test_choco_where_the_config_rules_it_out);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(model_options_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
