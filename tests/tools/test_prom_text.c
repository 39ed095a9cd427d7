/*
 * libgossip's Prometheus text of the status document (prom_text.c): the
 * name label sits beside peer on every per-edge series, escaped as the
 * exposition format says, and is left out for an edge without a Name;
 * the growable buffer holds a document of many edges whole.  The
 * document's seeds ([Cluster]) parse with their addresses, and an address
 * that is not a string makes the document malformed.
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

START_TEST(test_seeds_parsed)
{
	static const char doc[] =
		"{\"seeds\":[{\"seed\":\"s.x:7000\",\"kind\":\"host\",\"state\":\"stale\","
		"\"resolutions\":3,\"failures\":1,\"cut\":0,"
		"\"addresses\":[\"10.0.0.1:7000\",\"[fd00::1]:7000\"],\"last_error\":\"e\"},"
		"{\"seed\":\"_g._tcp.x\",\"kind\":\"srv\",\"state\":\"pending\","
		"\"addresses\":[]}],\"seed_addresses\":2}";
	char err[128] = "";
	gsp_sdoc st;

	ck_assert_msg(gsp_sdoc_parse(doc, strlen(doc), &st, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(st.n_seeds, 2);
	ck_assert_str_eq(st.seeds[0].seed, "s.x:7000");
	ck_assert_str_eq(st.seeds[0].state, "stale");
	ck_assert_str_eq(st.seeds[0].last_error, "e");
	ck_assert_uint_eq(st.seeds[0].failures.v, 1);
	ck_assert_uint_eq(st.seeds[0].n_addresses, 2);
	ck_assert_str_eq(st.seeds[0].addresses[1], "[fd00::1]:7000");
	ck_assert_str_eq(st.seeds[1].kind, "srv");
	ck_assert_uint_eq(st.seeds[1].n_addresses, 0);
	ck_assert(st.seed_addresses.set && st.seed_addresses.v == 2);
	gsp_sdoc_clear(&st);

	static const char bad[] = "{\"seeds\":[{\"seed\":\"s.x:1\",\"addresses\":[1]}]}";
	ck_assert_int_lt(gsp_sdoc_parse(bad, strlen(bad), &st, err, sizeof(err)), 0);
	ck_assert_msg(strstr(err, "seeds[0].addresses[0] is not a string"), "%s", err);
}
END_TEST

/* A member's "cluster" object: its members, which are neighbours, and
 * each malformation named by its path; its counters reach the metrics. */
START_TEST(test_cluster_parsed)
{
	static const char doc[] =
		"{\"public_key\":\"A\",\"counters\":{\"member_joins\":4},"
		"\"cluster\":{\"incarnation\":7,\"members_total\":3,"
		"\"members\":[{\"key\":\"A\",\"name\":\"a\",\"status\":\"alive\","
		"\"incarnation\":7,\"probe\":null,\"endpoint\":\"10.0.0.1:7000\"},"
		"{\"key\":\"B\",\"name\":\"\",\"status\":\"suspect\",\"incarnation\":2,"
		"\"endpoint\":null},{\"key\":\"C\",\"status\":\"alive\",\"probe\":\"dead\"}],"
		"\"neighbours\":[\"C\"]}}";
	char err[128] = "";
	gsp_sdoc st;

	ck_assert_msg(gsp_sdoc_parse(doc, strlen(doc), &st, err, sizeof(err)) == 0, "%s", err);
	ck_assert(st.have_cluster);
	ck_assert(st.incarnation.set && st.incarnation.v == 7);
	ck_assert(st.members_total.set && st.members_total.v == 3);
	ck_assert_uint_eq(st.n_members, 3);
	ck_assert_uint_eq(st.n_neighbours, 1);
	ck_assert_str_eq(st.members[0].endpoint, "10.0.0.1:7000");
	ck_assert_str_eq(st.members[1].status, "suspect");
	ck_assert_ptr_null(st.members[1].endpoint);
	ck_assert(!st.members[0].neighbour && !st.members[1].neighbour);
	ck_assert(st.members[2].neighbour);
	ck_assert_ptr_null(st.members[0].probe);
	ck_assert_str_eq(st.members[2].probe, "dead");
	gsp_sdoc_clear(&st);
	char *text = expose(doc);
	ck_assert_ptr_nonnull(strstr(text, "\ngossipd_member_joins_total 4\n"));
	ck_assert_ptr_nonnull(strstr(text, "# HELP gossipd_member_joins_total Members"));
	free(text);

	/* Not a member: no cluster. */
	ck_assert_int_eq(gsp_sdoc_parse("{}", 2, &st, err, sizeof(err)), 0);
	ck_assert(!st.have_cluster);
	gsp_sdoc_clear(&st);

	static const struct {
		const char *doc, *want;
	} bad[] = {
		{"{\"cluster\":[]}", "cluster is not an object"},
		{"{\"cluster\":{\"incarnation\":-1}}", "incarnation"},
		{"{\"cluster\":{\"neighbours\":{}}}", "cluster.neighbours is not an array"},
		{"{\"cluster\":{\"neighbours\":[1]}}", "cluster.neighbours[0] is not a string"},
		{"{\"cluster\":{\"members\":{}}}", "cluster.members is not an array"},
		{"{\"cluster\":{\"members\":[{},2]}}", "cluster.members[1] is not an object"},
		{"{\"cluster\":{\"members\":[{\"key\":3}]}}", "cluster.members[0]"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		ck_assert_int_lt(gsp_sdoc_parse(bad[i].doc, strlen(bad[i].doc), &st, err,
						sizeof(err)), 0);
		ck_assert_msg(strstr(err, bad[i].want), "%zu: %s", i, err);
	}
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
	tcase_add_test(tc, test_seeds_parsed);
	tcase_add_test(tc, test_cluster_parsed);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
