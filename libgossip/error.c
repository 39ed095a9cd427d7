/* Error texts for libgossip return codes (errno values and GSP_E*). */
#include <string.h>

#include "internal.h"

const char *gsp_strerror(int err)
{
	switch (err) {
	case 0:
		return "success";
	case GSP_ENONFINITE:
		return "non-finite value (NaN or infinity)";
	case GSP_ESTATE:
		return "operation not valid in the edge's current state";
	case GSP_ESHAPE:
		return "shape or message size mismatch";
	case GSP_EROUND:
		return "message for a round the edge is not in";
	default:
		if (err < 0 && err > -4096)
			return strerror(-err);
		return "unknown error";
	}
}
