/* SPDX-License-Identifier: MIT */
/*
 * The domain XML parser's own helpers (domain_xml.c), shared by its files
 * (domain.c: the memory; hostdev.c: the devices passed through): XPath over
 * the parsed document, and the refusal that names what is wrong.
 */
#ifndef PREALLOC_HOOK_DOMAIN_XML_H
#define PREALLOC_HOOK_DOMAIN_XML_H

#include <stddef.h>

#include <libxml/xpath.h>

struct domain;

struct px {
	xmlXPathContextPtr x;
	char *why;
	size_t why_len;
};

/* why[] from fmt; returns -EINVAL. */
int px_bad(struct px *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The string value of expr relative to node (NULL: the document); 1 found, 0 not. */
int px_str(struct px *p, xmlNodePtr node, const char *expr, char *buf, size_t len);
/* The nodes expr selects from the document's root (free with xmlXPathFreeObject). */
xmlXPathObjectPtr px_nodes(struct px *p, const char *expr);
unsigned int px_count(xmlXPathObjectPtr o);

/* hostdev.c: the devices passed through, into d; 0 or -EINVAL with why. */
int hostdev_parse(struct px *p, struct domain *d);

#endif
