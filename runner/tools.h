/* The agent toolset (agent_toolset_20260401: bash, read, write, edit, glob, grep) as the runner
 * runs it inside a session's sandbox, and the tools an agent offers the model (docs/runner.md).
 * The reference behaviour is the official SDK's tools/agent-toolset/node.js; every tool runs as
 * commands in the sandbox through struct tool_exec, so it works on every backend that can run a
 * command. */
#ifndef TERRARIUM_RUNNER_TOOLS_H
#define TERRARIUM_RUNNER_TOOLS_H

#include <jansson.h>
#include <stddef.h>

#define TOOLSET_TYPE "agent_toolset_20260401"
#define TOOLS_OUTPUT_MAX (100 * 1024)	  /* bash and grep output kept (the rest: a note) */
#define TOOLS_FILE_MAX (256 * 1024)	  /* read and edit load at most this much */
#define TOOLS_BASH_TIMEOUT_MS 120000	  /* bash's default timeout_ms */
#define TOOLS_BASH_TIMEOUT_MAX_MS 3600000 /* the largest timeout_ms taken */
#define TOOLS_GLOB_MAX 200		  /* glob's results */
#define TOOLS_WALK_MAX 50000		  /* entries glob looks at */
#define TOOLS_GREP_TIMEOUT_MS 60000	  /* grep's time limit */
#define TOOLS_STATE_DIR ".terrarium"	  /* under the workdir: bash's cwd and environment */

/* how the tools go through a sandbox's commands */
#define TOOLS_FILE_TIMEOUT_MS 60000	      /* read, write, edit and glob's commands */
#define TOOLS_ARG_CHUNK (64 * 1024)	      /* bytes of one argument (the kernel takes 128 KiB) */
#define TOOLS_ARGV_MAX (512 * 1024)	      /* argument bytes of one command */
#define TOOLS_BASH_COMMAND_MAX TOOLS_ARGV_MAX /* a bash command's bytes */
#define TOOLS_EDIT_MAX (4 * 1024 * 1024)      /* bytes of a file as edit leaves it */
#define TOOLS_GLOB_PATTERNS_MAX 64	      /* patterns one glob's braces expand to */
#define TOOLS_GLOB_DEPTH_MAX 128	      /* directories deep glob matches a path */
#define TOOLS_WALK_OUTPUT_MAX (1024 * 1024)   /* bytes of the walk glob reads (mtime, path) */
#define TOOLS_STDERR_MAX 2048		      /* bytes of a failing search's stderr kept */

/* ---- what the agent offers ---- */

enum tool_kind { TOOL_UNKNOWN, TOOL_BUILTIN, TOOL_CUSTOM, TOOL_MCP };
enum tool_policy { TOOL_ALLOW, TOOL_ASK };

/* The tools of an agent snapshot's `tools` (and, for mcp_toolset, its MCP servers). */
struct toolset {
	json_t *definitions; /* the Messages API's tools[]: name, description, input_schema (new
			      * reference) */
	json_t *kinds;	     /* name -> {"kind":..., "policy":...} (new reference) */
	json_t *mcp;	     /* each mcp_toolset's server -> {"enabled", "policy", "configs": {tool
			      * -> {"enabled", "policy"}}}, the tools themselves not known yet (new
			      * reference) */
};

/* Read TOOLS (the agent's `tools`, may be NULL: no tools) into TS: the agent toolset's enabled
 * tools (bash, read, write, edit, glob, grep; web_fetch and web_search are never offered) with
 * the SDK's definitions, custom tools as given, each mcp_toolset's configuration. A policy
 * "auto" is taken as always_ask (no one here decides for the user). 0, or -1 with ERR set (a
 * malformed entry, a name offered twice, a server or a tool configured twice) and TS empty. */
int toolset_load(const json_t *tools, struct toolset *ts, char *err, size_t errsz);

/* What NAME is, and its permission policy (TOOL_ALLOW for custom tools). */
enum tool_kind toolset_kind(const struct toolset *ts, const char *name, enum tool_policy *policy);

/* Whether the mcp_toolset of SERVER enables its tool TOOL: 1 (and *POLICY set), 0 (disabled),
 * -1 (no mcp_toolset names SERVER). */
int toolset_mcp_policy(const struct toolset *ts, const char *server, const char *tool,
		       enum tool_policy *policy);

void toolset_release(struct toolset *ts);

/* ---- running a built-in tool ---- */

/* What one command in the sandbox did. */
struct tool_exec_out {
	int status;    /* exit status, 128 + signal when killed */
	int timed_out; /* killed at its time limit */
	int cancelled; /* stopped because the turn was interrupted */
	char *output;  /* stdout and stderr as they came, at most the cap asked for (owned) */
	size_t len;
	int truncated; /* output was cut (the oldest part dropped) */
};

/* How the tools run commands in the session's sandbox; the runner binds it to the sandbox
 * library (and the tests to plain processes). */
struct tool_exec {
	/* Run ARGV in the sandbox with IN (INLEN bytes, may be NULL) on its standard input (only
	 * when stdin_ok), a time limit of TIMEOUT_MS and at most CAP bytes of output kept. 0 with
	 * OUT filled (tool_exec_out_release it), or -1 with ERR set when the command could not be
	 * run at all. */
	int (*run)(void *ctx, char *const argv[], const char *in, size_t inlen, long timeout_ms,
		   size_t cap, struct tool_exec_out *out, char *err, size_t errsz);
	void *ctx;
	const char *workdir; /* the sandbox's working directory as its commands see it */
	int stdin_ok;	     /* run takes standard input; else file contents go in argv */
};

void tool_exec_out_release(struct tool_exec_out *out);

/* The result the model gets. */
struct tool_result {
	char *text; /* owned; never empty ("(no output)") */
	int is_error;
};

/* Run built-in tool NAME with INPUT through X. Always fills RES (a failing tool is an error
 * result, as the SDK's ToolError); returns -1 only when the sandbox could not run a command
 * (RES then says so too) or memory ran out (RES->text may then be NULL). bash keeps its working
 * directory and exported variables in X->workdir/TOOLS_STATE_DIR between calls. */
int tools_run(const struct tool_exec *x, const char *name, const json_t *input,
	      struct tool_result *res);

void tool_result_release(struct tool_result *res);

#endif
