/*
 * shapes: the text format that describes a model's parameter tensors.
 *
 * This module owns parsing a shapes file (such as tools/data/resnet50.shapes)
 * into an array of gsp_tensor descriptions (name, ndim, shape) ready for
 * gsp_layout_new().  It promises a strict, locale-independent parser that
 * reports the first offending line, never allocates from anything the input
 * declares, and writes no output but the error line on failure.  It does not
 * log, and it does not check cross-tensor rules (duplicate names, total
 * size): gsp_layout_new() owns those.
 *
 * Format, one line at a time (lines end with '\n'; the last may not):
 *   - an empty line, or one of only spaces and tabs, is ignored;
 *   - a line whose first character is '#' is a comment;
 *   - any other line is "NAME<sep>DIMS" with nothing before or after:
 *       NAME  [A-Za-z0-9_.]+, at most GSP_NAME_MAX - 1 characters;
 *       sep   one run of spaces and/or tabs;
 *       DIMS  1..GSP_MAX_DIMS decimals joined by 'x' ("64x3x7x7", "1000"),
 *             each 1..2^40, no sign, no leading zero, no whitespace.
 * Any other byte ('\r', NUL, non-ASCII, trailing blanks) is an error.
 * A file holds 1..GSP_SHAPES_MAX_TENSORS tensors.
 */
#ifndef GSP_TOOLS_SHAPES_H
#define GSP_TOOLS_SHAPES_H

#include <stddef.h>
#include <stdint.h>

#include "gossip.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GSP_SHAPES_MAX_TENSORS 100000
#define GSP_SHAPES_MAX_DIM (UINT64_C(1) << 40)
#define GSP_SHAPES_MAX_BYTES ((size_t)16 << 20)

/* Parses len bytes of text (need not be NUL-terminated).  On success
 * *ret_tensors gets a malloc'ed array (free() it) of *ret_count tensors
 * whose derived fields are zero.  On failure returns a negative errno and
 * writes no output, except that with -EINVAL it sets *ret_error_line (if
 * not NULL) to the 1-based number of the first malformed line; for input
 * without any tensor, to the line after the last one; for invalid
 * arguments, to 0.  Other errors: -EFBIG when len > GSP_SHAPES_MAX_BYTES,
 * -ENOMEM. */
int gsp_shapes_parse(const char *text, size_t len, gsp_tensor **ret_tensors,
		     size_t *ret_count, unsigned *ret_error_line)
	__attribute__((warn_unused_result));

/* Reads the file at path (at most GSP_SHAPES_MAX_BYTES, else -EFBIG) and
 * parses it as above.  I/O errors return -errno and leave *ret_error_line
 * untouched. */
int gsp_shapes_load(const char *path, gsp_tensor **ret_tensors,
		    size_t *ret_count, unsigned *ret_error_line)
	__attribute__((warn_unused_result));

#ifdef __cplusplus
}
#endif
#endif
