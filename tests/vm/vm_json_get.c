/* SPDX-License-Identifier: MIT */
/*
 * vm_json_get: read one value out of a JSON document, for the guest's sh
 * tests (the guest has no jq).
 *
 *   vm_json_get FILE PATH
 *
 * PATH is slash-separated: object keys, array indexes, and a final "#" for
 * an array's length, e.g. "nodes/#", "nodes/0/cpus", "nodes/1/pages_on_node".
 * Scalars print as text, arrays of scalars as space-separated values, anything
 * else as JSON. Exits 1 when the file does not parse or the path is absent.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

static void print_scalar(struct json_object *v)
{
	if (json_object_is_type(v, json_type_string))
		fputs(json_object_get_string(v), stdout);
	else
		fputs(json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN), stdout);
}

int main(int argc, char **argv)
{
	struct json_object *root, *cur;
	char *save = NULL;

	if (argc != 3) {
		fprintf(stderr, "usage: %s FILE PATH\n", argv[0]);
		return 1;
	}
	root = json_object_from_file(argv[1]);
	if (!root) {
		fprintf(stderr, "%s: not JSON: %s\n", argv[1], json_util_get_last_err());
		return 1;
	}
	cur = root;
	for (char *key = strtok_r(argv[2], "/", &save); key; key = strtok_r(NULL, "/", &save)) {
		if (json_object_is_type(cur, json_type_array)) {
			char *end;
			long idx;

			if (!strcmp(key, "#")) {
				printf("%zu\n", json_object_array_length(cur));
				return 0;
			}
			idx = strtol(key, &end, 10);
			if (*end || idx < 0 || (size_t)idx >= json_object_array_length(cur))
				goto absent;
			cur = json_object_array_get_idx(cur, (size_t)idx);
		} else if (!json_object_is_type(cur, json_type_object) ||
			   !json_object_object_get_ex(cur, key, &cur)) {
			goto absent;
		}
	}
	if (json_object_is_type(cur, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(cur); i++) {
			if (i)
				putchar(' ');
			print_scalar(json_object_array_get_idx(cur, i));
		}
	} else {
		print_scalar(cur);
	}
	putchar('\n');
	json_object_put(root);
	return 0;
absent:
	fprintf(stderr, "%s: no value at that path\n", argv[1]);
	json_object_put(root);
	return 1;
}
