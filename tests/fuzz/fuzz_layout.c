/* libFuzzer harness: layout specs ("100x100,64x300,64") and edge lists
 * ("0-1,1-2") parsed from arbitrary text. */
#include <stdlib.h>
#include <string.h>

#include "gossip.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0 || size > 4096)
		return 0;
	/* First byte picks the parser and, for edge lists, the node count. */
	char *s = malloc(size);
	if (!s)
		return 0;
	memcpy(s, data + 1, size - 1);
	s[size - 1] = '\0';
	if (data[0] & 1) {
		gsp_layout *l = NULL;
		if (gsp_layout_parse(s, &l) == 0) {
			uint64_t sum = 0;
			for (size_t i = 0; i < gsp_layout_count(l); i++)
				sum += gsp_layout_tensor(l, i)->numel;
			if (sum != gsp_layout_floats(l))
				abort();
		}
		gsp_layout_free(l);
	} else {
		gsp_graph *g = NULL;
		if (gsp_graph_parse_edges(s, 2 + data[0] / 2, &g) == 0) {
			for (unsigned i = 0; i < gsp_graph_nodes(g); i++)
				if (gsp_graph_degree(g, i) == 0)
					abort();
		}
		gsp_graph_free(g);
	}
	free(s);
	return 0;
}
