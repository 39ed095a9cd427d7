/*
 * libgossip's Prometheus text of the status document (prom_text.c): the
 * name label sits beside peer on every per-edge series, escaped as the
 * exposition format says, and is left out for an edge without a Name;
 * the growable buffer holds a document of many edges whole.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prom_text.h"
#include "status_doc.h"

#define PEER "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="

static char *expose(const char *json)
{
	gsp_textbuf out = GSP_TEXTBUF_INIT;
	char err[128] = "";
	gsp_sdoc st;

	ck_assert_msg(gsp_sdoc_parse(json, strlen(json), &st, err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_int_eq(gsp_prom_write(&st, &out), 0);
	gsp_sdoc_clear(&st);
	ck_assert(out.p && out.len == strlen(out.p));
	return out.p;
}

START_TEST(test_name_label_escaped)
{
	char *text = expose("{\"edges\":[{\"peer\":\"" PEER "\","
			    "\"name\":\"rack \\\"2\\\" \\\\ a\\nb\",\"state\":\"up\","
			    "\"rounds\":7,\"endpoint\":\"127.0.0.1:1\"}]}");
	const char *lab = "peer=\"" PEER "\",name=\"rack \\\"2\\\" \\\\ a\\nb\"";
	char want[512];

	snprintf(want, sizeof(want), "\ngossipd_edge_rounds_total{%s} 7\n", lab);
	ck_assert_msg(strstr(text, want), "%s", text);
	snprintf(want, sizeof(want), "\ngossipd_edge_state{%s,state=\"up\"} 1\n", lab);
	ck_assert_msg(strstr(text, want), "%s", text);
	snprintf(want, sizeof(want), "\ngossipd_edge_info{%s,endpoint=\"127.0.0.1:1\"} 1\n", lab);
	ck_assert_msg(strstr(text, want), "%s", text);
	free(text);
}
END_TEST

START_TEST(test_no_name_no_label)
{
	char *text = expose("{\"edges\":[{\"peer\":\"" PEER "\",\"rounds\":7}]}");

	ck_assert_msg(strstr(text, "\ngossipd_edge_rounds_total{peer=\"" PEER "\"} 7\n"),
		      "%s", text);
	ck_assert(!strstr(text, "name="));
	free(text);
}
END_TEST

START_TEST(test_many_edges_whole)
{
	size_t n = 1024, cap = 64 + n * 96, len;
	char *json = malloc(cap), *text;
	size_t count = 0;

	ck_assert_ptr_nonnull(json);
	len = (size_t)snprintf(json, cap, "{\"edges\":[");
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(json + len, cap - len,
					"%s{\"peer\":\"p%zu\",\"name\":\"n%zu\",\"rounds\":%zu}",
					i ? "," : "", i, i, i);
	snprintf(json + len, cap - len, "]}");
	text = expose(json);
	for (const char *p = text; (p = strstr(p, "\ngossipd_edge_rounds_total{")); p++)
		count++;
	ck_assert_uint_eq(count, n);
	ck_assert(strstr(text, "gossipd_edge_rounds_total{peer=\"p1023\",name=\"n1023\"} 1023\n"));
	free(json);
	free(text);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("prom_text");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_name_label_escaped);
	tcase_add_test(tc, test_no_name_no_label);
	tcase_add_test(tc, test_many_edges_whole);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
