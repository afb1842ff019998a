/* SPDX-License-Identifier: MIT */
/* libFuzzer: the libvirt hook's domain XML parser and demand computation. */
#include <stddef.h>
#include <stdint.h>

#include "domain.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct domain d;
	static struct guest_demand dd;
	struct host_view h = { .nr_nodes = 2, .nodes = { 0, 1 }, .default_page = 2u << 20,
			       .backing_page = 2u << 20 };
	char why[512];

	if (domain_parse((const char *)data, size, &d, why, sizeof(why)) == 0)
		domain_demand(&d, &h, &dd, why, sizeof(why));
	return 0;
}
