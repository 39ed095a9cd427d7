/* libFuzzer harness: gossipd configuration files from arbitrary bytes.
 * Accept or reject, never crash; an error always names the file. */
#include <stdlib.h>
#include <string.h>

#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	gsp_daemon_config cfg;
	char err[512] = "";
	gsp_daemon_config_default(&cfg);
	int rc = gsp_daemon_config_parse((const char *)data, size, "fuzz.conf",
					 &cfg, err, sizeof(err));
	if (rc < 0 && strncmp(err, "fuzz.conf", 9) != 0)
		abort();
	if (rc == 0 && cfg.n_peers > GSP_MAX_PEERS)
		abort();
	gsp_daemon_config_clear(&cfg);
	return 0;
}
