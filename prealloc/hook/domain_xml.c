/* SPDX-License-Identifier: MIT */
/*
 * XPath over a parsed domain document, for the parser's files (domain.c,
 * hostdev.c), and the refusal that names what is wrong.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "domain_xml.h"

int px_bad(struct px *p, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(p->why, p->why_len, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

int px_str(struct px *p, xmlNodePtr node, const char *expr, char *buf, size_t len)
{
	xmlXPathObjectPtr o;
	xmlChar *s;
	int found = 0;

	p->x->node = node ? node : xmlDocGetRootElement(p->x->doc);
	o = xmlXPathEvalExpression((const xmlChar *)expr, p->x);
	if (!o)
		return 0;
	if (o->nodesetval && o->nodesetval->nodeNr > 0) {
		s = xmlNodeGetContent(o->nodesetval->nodeTab[0]);
		if (s) {
			snprintf(buf, len, "%s", (const char *)s);
			xmlFree(s);
			found = 1;
		}
	}
	xmlXPathFreeObject(o);
	return found;
}

xmlXPathObjectPtr px_nodes(struct px *p, const char *expr)
{
	p->x->node = xmlDocGetRootElement(p->x->doc);
	return xmlXPathEvalExpression((const xmlChar *)expr, p->x);
}

unsigned int px_count(xmlXPathObjectPtr o)
{
	return o && o->nodesetval ? (unsigned int)o->nodesetval->nodeNr : 0;
}
