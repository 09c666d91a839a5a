/**
 * lib/integrations: thin adapters that put the one Scorer behind the
 * reranking interfaces of JavaScript RAG frameworks (docs/design.md
 * "Integrations"): the AI SDK's reranking model (ai-sdk.ts), LangChain's
 * document compressor (langchain.ts) and LlamaIndex's node postprocessor
 * (llamaindex.ts). Each is its own subpath export (`pjrt-score/ai-sdk`,
 * `/langchain`, `/llamaindex`) and requires its framework only when that
 * subpath is loaded; this index requires none of them, and exports nothing:
 * what the adapters share is scorer-source.ts.
 * May import: scoring (its index only), util.
 */
export {};
