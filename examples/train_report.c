/* train_report: text, JSON-lines and CSV renderings of gossip-train's
 * progress records (see train_report.h). */
#include <math.h>
#include <string.h>

#include "train_report.h"

gsp_report gsp_report_empty(const char *event, unsigned node)
{
	return (gsp_report){.event = event, .node = node, .loss = NAN,
			    .test_accuracy = NAN, .averaged_accuracy = NAN,
			    .consensus = NAN, .sent_mb = NAN, .seconds = NAN};
}

/* The numeric fields, in output order. */
static const char *const columns[] = {
	"loss", "test_accuracy", "averaged_accuracy", "consensus", "sent_mb",
	"seconds",
};

static void numbers(const gsp_report *r, double v[6])
{
	v[0] = r->loss;
	v[1] = r->test_accuracy;
	v[2] = r->averaged_accuracy;
	v[3] = r->consensus;
	v[4] = r->sent_mb;
	v[5] = r->seconds;
}

void gsp_report_header(FILE *f, gsp_report_format fmt)
{
	if (fmt != GSP_REPORT_CSV)
		return;
	fputs("event,node,epoch,step", f);
	for (size_t i = 0; i < sizeof(columns) / sizeof(*columns); i++)
		fprintf(f, ",%s", columns[i]);
	fputs(",average_rounds\n", f);
	fflush(f);
}

static void print_text(FILE *f, const gsp_report *r)
{
	if (strcmp(r->event, "final") == 0) {
		fprintf(f, "node %u final: test accuracy %.2f%%", r->node,
			100 * r->test_accuracy);
		if (!isnan(r->averaged_accuracy))
			fprintf(f, " before averaging, %.2f%% after (%u AVERAGE "
				"rounds)", 100 * r->averaged_accuracy,
				r->average_rounds);
	} else {
		fprintf(f, "node %u epoch %u step %llu:", r->node, r->epoch,
			(unsigned long long)r->step);
		if (!isnan(r->loss))
			fprintf(f, " loss %.4f", r->loss);
		if (!isnan(r->test_accuracy))
			fprintf(f, ", test accuracy %.2f%%",
				100 * r->test_accuracy);
	}
	if (!isnan(r->consensus))
		fprintf(f, ", consensus %.2e", r->consensus);
	if (!isnan(r->sent_mb))
		fprintf(f, ", sent %.1f MB", r->sent_mb);
	fprintf(f, ", %.1f s\n", r->seconds);
}

void gsp_report_print(FILE *f, gsp_report_format fmt, const gsp_report *r)
{
	double v[6];

	numbers(r, v);
	switch (fmt) {
	case GSP_REPORT_TEXT:
		print_text(f, r);
		break;
	case GSP_REPORT_JSON:
		fprintf(f, "{\"event\":\"%s\",\"node\":%u,\"epoch\":%u,"
			"\"step\":%llu", r->event, r->node, r->epoch,
			(unsigned long long)r->step);
		for (size_t i = 0; i < 6; i++) {
			if (!isfinite(v[i]))
				fprintf(f, ",\"%s\":null", columns[i]);
			else
				fprintf(f, ",\"%s\":%.6g", columns[i], v[i]);
		}
		fprintf(f, ",\"average_rounds\":%u}\n", r->average_rounds);
		break;
	case GSP_REPORT_CSV:
		fprintf(f, "%s,%u,%u,%llu", r->event, r->node, r->epoch,
			(unsigned long long)r->step);
		for (size_t i = 0; i < 6; i++) {
			if (!isfinite(v[i]))
				fputs(",", f);
			else
				fprintf(f, ",%.6g", v[i]);
		}
		fprintf(f, ",%u\n", r->average_rounds);
		break;
	}
	fflush(f);
}
