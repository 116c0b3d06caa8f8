#include "quote.h"

#include <string.h>

/* Append N bytes of S at *LEN, keeping the NUL; -1 when it does not fit. */
static int put(char *out, size_t outsz, size_t *len, const char *s, size_t n)
{
	if (*len + n + 1 > outsz)
		return -1;
	memcpy(out + *len, s, n);
	*len += n;
	out[*len] = '\0';
	return 0;
}

int sbx_quote_arg(const char *arg, char *out, size_t outsz, size_t *len)
{
	size_t start = *len;
	const char *p = arg;

	if (put(out, outsz, len, "'", 1))
		goto fail;
	for (;;) {
		size_t run = strcspn(p, "'");
		if (put(out, outsz, len, p, run))
			goto fail;
		p += run;
		if (!*p)
			break;
		/* close the quote, a double-quoted single quote, reopen */
		if (put(out, outsz, len, "'\"'\"'", 5))
			goto fail;
		p++;
	}
	if (put(out, outsz, len, "'", 1))
		goto fail;
	return 0;
fail:
	*len = start;
	if (outsz)
		out[start < outsz ? start : outsz - 1] = '\0';
	return -1;
}

int sbx_quote_argv(char *const argv[], char *out, size_t outsz)
{
	size_t len = 0;

	if (!outsz)
		return -1;
	out[0] = '\0';
	if (!argv[0])
		return -1;
	for (int i = 0; argv[i]; i++) {
		if (i && put(out, outsz, &len, " ", 1))
			return -1;
		if (sbx_quote_arg(argv[i], out, outsz, &len))
			return -1;
	}
	return 0;
}
