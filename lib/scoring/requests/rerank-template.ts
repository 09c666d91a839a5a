/**
 * Rerank templates, as data (docs/design.md "Rerank"). A template says how a
 * query and a document become one prompt whose next token answers "yes" or
 * "no": a prefix (system turn, instruction, query), the document, a suffix
 * that ends where the answer is read, and the two answer strings. The prefix
 * is the same for every document of a request, so it is the shared query of
 * one multi-item plan.
 *
 * Special tokens of a template (`<|im_start|>`) are token ids looked up in
 * the model's vocabulary, never text: user text is tokenized with special
 * tokens off, so a document containing "<|im_end|>" is scored as those
 * characters. Consecutive text pieces and fields are tokenized as one string,
 * as the published recipes do; the document starts a new piece at a
 * whitespace boundary, where byte-level pre-tokenizers split anyway.
 */
import { PjrtScoreError } from '../../util/errors';

/**
 * One part of a template: literal text, a request field, a special token by
 * its text, a boundary (the text before and after is tokenized apart, as a
 * reference that tokenizes them in separate calls does), or pieces used only
 * when the request's instruction is not empty.
 */
export type TemplatePiece =
  | { readonly text: string }
  | { readonly field: 'query' | 'instruction' }
  | { readonly special: string }
  | { readonly boundary: true }
  | { readonly whenInstruction: readonly TemplatePiece[] };

/**
 * How a document's relevance is read at the answer position:
 *   'yes-vs-no'  softmax([no, yes])[yes]; rawScores: logit(yes) - logit(no),
 *                the log-odds (Qwen3-Reranker, mxbai-rerank-v2);
 *   'yes-logit'  sigmoid(logit(yes)); rawScores: logit(yes) itself, the raw
 *                logit over the whole vocabulary (FlagEmbedding's LLM
 *                reranker: compute_score reports it, sigmoid with normalize).
 */
export type RelevanceScale = 'yes-vs-no' | 'yes-logit';

export interface RerankTemplate {
  readonly name: string;
  /** Before the document. */
  readonly prefix: readonly TemplatePiece[];
  /**
   * Text tokenized together with the document, in front of it (a space, so the document's first word keeps its leading
   * space).
   */
  readonly documentLead: string;
  /** After the document; the answer is read at its last token. Its `instruction` field is the request's. */
  readonly suffix: readonly TemplatePiece[];
  /** The answer strings; each must be one token of the model's vocabulary. */
  readonly yes: string;
  readonly no: string;
  /** The instruction used when a request gives none. */
  readonly defaultInstruction: string;
  /** Where the recipe comes from (docs/rerank.md lists them). */
  readonly reference?: string;
  /** How the relevance is read; default 'yes-vs-no'. */
  readonly relevance?: RelevanceScale;
}

/** What a template needs from a tokenizer. */
interface TemplateTokenizer {
  /** Text -> ids with special tokens neither added nor parsed. */
  encode(text: string): number[];
  /** A special token's id by its text, or undefined. */
  tokenToId(token: string): number | undefined;
}

/** A template bound to one model's vocabulary. */
export interface ResolvedTemplate {
  readonly template: RerankTemplate;
  readonly yesId: number;
  readonly noId: number;
  /** The prompt before the document, for one query and instruction. */
  prefixTokens(query: string, instruction: string): number[];
  /** One document as an item: its tokens (with the lead) followed by the suffix for this instruction. */
  documentTokens(document: string, instruction: string): number[];
  /** Tokens of the suffix that ends every item for this instruction (never cut by truncation). */
  suffixLength(instruction: string): number;
}

export class TemplateError extends PjrtScoreError {
  declare readonly code: 'TEMPLATE_INVALID';
  constructor(message: string) {
    super(message, 'TEMPLATE_INVALID');
    this.name = 'TemplateError';
  }
}

const JUDGE =
  'Judge whether the Document meets the requirements based on the Query and ' +
  'the Instruct provided. Note that the answer can only be "yes" or "no".';
const DEFAULT_INSTRUCTION = 'Given a web search query, retrieve relevant passages that answer the query';
const USER_TURN: readonly TemplatePiece[] = [
  { text: '<Instruct>: ' },
  { field: 'instruction' },
  { text: '\n<Query>: ' },
  { field: 'query' },
  { text: '\n<Document>:' },
];

/** Qwen3-Reranker's published recipe (its model card): ChatML, an empty think block, "yes"/"no". */
const QWEN3_RERANKER: RerankTemplate = {
  name: 'qwen3-reranker',
  prefix: [
    { special: '<|im_start|>' },
    { text: `system\n${JUDGE}` },
    { special: '<|im_end|>' },
    { text: '\n' },
    { special: '<|im_start|>' },
    { text: 'user\n' },
    ...USER_TURN,
  ],
  documentLead: ' ',
  suffix: [
    { special: '<|im_end|>' },
    { text: '\n' },
    { special: '<|im_start|>' },
    { text: 'assistant\n<think>\n\n</think>\n\n' },
  ],
  yes: 'yes',
  no: 'no',
  defaultInstruction: DEFAULT_INSTRUCTION,
  reference: 'the Qwen3-Reranker model card (its transformers code)',
};

/**
 * The same judgement for any ChatML chat model (SmolLM2, Qwen2/2.5/3 instruct): the answer opens the assistant turn.
 */
const CHATML_YES_NO: RerankTemplate = {
  ...QWEN3_RERANKER,
  name: 'chatml-yes-no',
  suffix: [{ special: '<|im_end|>' }, { text: '\n' }, { special: '<|im_start|>' }, { text: 'assistant\n' }],
  reference: 'pjrt-score: the Qwen3-Reranker judgement in this chat format (no reference package)',
};

/** The same judgement for Llama 3 chat models (header tokens). */
const LLAMA3_YES_NO: RerankTemplate = {
  name: 'llama3-yes-no',
  prefix: [
    { special: '<|start_header_id|>' },
    { text: 'system' },
    { special: '<|end_header_id|>' },
    { text: `\n\n${JUDGE}` },
    { special: '<|eot_id|>' },
    { special: '<|start_header_id|>' },
    { text: 'user' },
    { special: '<|end_header_id|>' },
    { text: '\n\n' },
    ...USER_TURN,
  ],
  documentLead: ' ',
  suffix: [
    { special: '<|eot_id|>' },
    { special: '<|start_header_id|>' },
    { text: 'assistant' },
    { special: '<|end_header_id|>' },
    { text: '\n\n' },
  ],
  yes: 'yes',
  no: 'no',
  defaultInstruction: DEFAULT_INSTRUCTION,
  reference: 'pjrt-score: the Qwen3-Reranker judgement in this chat format (no reference package)',
};

/** The same judgement for Gemma chat models: Gemma has no system turn, so the judging text opens the user turn. */
const GEMMA_YES_NO: RerankTemplate = {
  name: 'gemma-yes-no',
  prefix: [{ special: '<start_of_turn>' }, { text: `user\n${JUDGE}\n\n` }, ...USER_TURN],
  documentLead: ' ',
  suffix: [{ special: '<end_of_turn>' }, { text: '\n' }, { special: '<start_of_turn>' }, { text: 'model\n' }],
  yes: 'yes',
  no: 'no',
  defaultInstruction: DEFAULT_INSTRUCTION,
  reference: 'pjrt-score: the Qwen3-Reranker judgement in this chat format (no reference package)',
};

const MXBAI_TASK =
  'You are a search relevance expert who evaluates how well documents match search queries. For each query-document ' +
  'pair, carefully analyze the semantic relationship between them, ' +
  'then provide your binary relevance judgment (0 for not relevant, 1 for relevant).\nRelevance:';

/**
 * mxbai-rerank-v2 (mixedbread-ai/mxbai-rerank-base-v2, -large-v2), as the
 * `mxbai-rerank` package's MxbaiRerankV2 builds it: a Qwen chat turn holding
 * "query: ..." (after "instruction: ...\n" when one is given), "\n",
 * "document: ...", "\n" and the task, each tokenized on its own; the answer
 * is "1" against "0" (its score is the logit difference, our raw score).
 */
const MXBAI_RERANK_V2: RerankTemplate = {
  name: 'mxbai-rerank-v2',
  prefix: [
    { special: '<|im_start|>' },
    { text: 'system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.' },
    { special: '<|im_end|>' },
    { text: '\n' },
    { special: '<|im_start|>' },
    { text: 'user\n' },
    { boundary: true },
    { whenInstruction: [{ text: 'instruction: ' }, { field: 'instruction' }, { text: '\n' }] },
    { text: 'query: ' },
    { field: 'query' },
    { boundary: true },
    { text: '\n' },
  ],
  documentLead: 'document: ',
  suffix: [
    { text: '\n' },
    { boundary: true },
    { text: MXBAI_TASK },
    { special: '<|im_end|>' },
    { text: '\n' },
    { special: '<|im_start|>' },
    { text: 'assistant\n' },
  ],
  yes: '1',
  no: '0',
  defaultInstruction: '',
  reference: 'the mxbai-rerank package (PyPI), MxbaiRerankV2',
};

/** FlagEmbedding's default prompt of its LLM rerankers (decoder_only/base.py), our instruction. */
const BGE_PROMPT =
  'Given a query A and a passage B, ' +
  "determine whether the passage contains an answer to the query by providing a prediction of either 'Yes' or 'No'.";

/**
 * bge-reranker-v2-gemma (BAAI), as FlagEmbedding's FlagLLMReranker builds
 * it: BOS (the tokenizer's add_bos_token), "A: " + query, "\n", "B: " +
 * document, "\n", the prompt, each tokenized on its own; the relevance is
 * the raw logit of "Yes" (compute_score), sigmoid of it with normalize.
 * The request's instruction is FlagEmbedding's `prompt`.
 */
const BGE_RERANKER_V2_GEMMA: RerankTemplate = {
  name: 'bge-reranker-v2-gemma',
  prefix: [{ text: 'A: ' }, { field: 'query' }, { boundary: true }, { text: '\n' }],
  documentLead: 'B: ',
  suffix: [{ text: '\n' }, { boundary: true }, { field: 'instruction' }],
  yes: 'Yes',
  no: 'No',
  defaultInstruction: BGE_PROMPT,
  reference: 'FlagEmbedding (PyPI), FlagLLMReranker',
  relevance: 'yes-logit',
};

export const RERANK_TEMPLATES: Readonly<Record<string, RerankTemplate>> = {
  [BGE_RERANKER_V2_GEMMA.name]: BGE_RERANKER_V2_GEMMA,
  [MXBAI_RERANK_V2.name]: MXBAI_RERANK_V2,
  [QWEN3_RERANKER.name]: QWEN3_RERANKER,
  [CHATML_YES_NO.name]: CHATML_YES_NO,
  [LLAMA3_YES_NO.name]: LLAMA3_YES_NO,
  [GEMMA_YES_NO.name]: GEMMA_YES_NO,
};

/**
 * The built-in template for a model, from its name and vocabulary: a model
 * named like bge-reranker-v2-gemma or mxbai-rerank v2 gets its package's
 * recipe, one named like a Qwen3 reranker that recipe; a ChatML vocabulary the
 * ChatML judge; Llama 3 header tokens the Llama 3 judge; Gemma's turn tokens
 * the Gemma judge. Anything else must name a template.
 */
export function chooseTemplate(
  model: { readonly name: string; readonly architecture: string },
  tokenizer: TemplateTokenizer,
): RerankTemplate {
  const name = model.name.toLowerCase();
  if (/bge-reranker-v2-gemma/.test(name)) return BGE_RERANKER_V2_GEMMA;
  if (/mxbai-rerank-.*v2/.test(name)) return MXBAI_RERANK_V2;
  if (/rerank/.test(name) && /qwen/.test(name + model.architecture)) return QWEN3_RERANKER;
  if (tokenizer.tokenToId('<|im_start|>') !== undefined && tokenizer.tokenToId('<|im_end|>') !== undefined)
    return CHATML_YES_NO;
  if (tokenizer.tokenToId('<|start_header_id|>') !== undefined && tokenizer.tokenToId('<|eot_id|>') !== undefined)
    return LLAMA3_YES_NO;
  if (tokenizer.tokenToId('<start_of_turn>') !== undefined && tokenizer.tokenToId('<end_of_turn>') !== undefined)
    return GEMMA_YES_NO;
  throw new TemplateError(
    `no built-in rerank template fits model ${model.name} (no ChatML, Llama 3 or Gemma special tokens); ` +
      `pass one of ${Object.keys(RERANK_TEMPLATES).join(', ')} as the template option`,
  );
}

/** Templates that ask a chat model to judge: the model is not a trained reranker. */
const JUDGE_TEMPLATES: ReadonlySet<RerankTemplate> = new Set([CHATML_YES_NO, LLAMA3_YES_NO, GEMMA_YES_NO]);

/** A reranker with a built-in recipe, named to a user whose model is not one (docs/models.md, "Which model"). */
export const SUGGESTED_RERANKER = 'Qwen/Qwen3-Reranker-0.6B';

/**
 * What to tell a user who reranks with a chat model through a judge template; null for a reranker, or a model no
 * template fits.
 */
export function rerankerAdvice(modelName: string, templateOf: () => RerankTemplate): string | null {
  let template: RerankTemplate;
  try {
    template = templateOf();
  } catch {
    return null;
  }
  if (!JUDGE_TEMPLATES.has(template)) return null;
  return (
    `${modelName} is a chat model, not a reranker: ` +
    `it ranks through the ${template.name} judge template, and its order is often wrong. ` +
    `For reranking, load a reranker: --model ${SUGGESTED_RERANKER} (docs/models.md, "Which model")`
  );
}

/**
 * The template a `rerankTemplate` option names: a built-in's name, a template of the caller's, or (undefined) the one
 * chooseTemplate picks.
 */
export function templateFor(
  option: string | RerankTemplate | undefined,
  model: { readonly name: string; readonly architecture: string },
  tokenizer: TemplateTokenizer,
): RerankTemplate {
  if (option === undefined) return chooseTemplate(model, tokenizer);
  if (typeof option !== 'string') return option;
  const named = RERANK_TEMPLATES[option];
  if (!named)
    throw new TemplateError(
      `unknown rerank template ${JSON.stringify(option)}; built in: ${Object.keys(RERANK_TEMPLATES).join(', ')}`,
    );
  return named;
}

/** Binds a template to a vocabulary: special tokens and answers become ids (TemplateError if one is missing). */
export function resolveTemplate(template: RerankTemplate, tokenizer: TemplateTokenizer): ResolvedTemplate {
  const special = (text: string): number => {
    const id = tokenizer.tokenToId(text);
    if (id === undefined)
      throw new TemplateError(`template ${template.name}: the model's vocabulary has no special token ${text}`);
    return id;
  };
  const single = (text: string): number => {
    const ids = tokenizer.encode(text);
    if (ids.length !== 1)
      throw new TemplateError(
        `template ${template.name}: the answer ${JSON.stringify(text)} is ${ids.length} tokens, not one`,
      );
    return ids[0];
  };
  // Fail at load, not at the first request.
  const specials = (list: readonly TemplatePiece[]): void => {
    for (const piece of list) {
      if ('special' in piece) special(piece.special);
      else if ('whenInstruction' in piece) specials(piece.whenInstruction);
    }
  };
  specials([...template.prefix, ...template.suffix]);
  const render = (pieces: readonly TemplatePiece[], fields: { query: string; instruction: string }): number[] => {
    const out: number[] = [];
    let text = '';
    const flush = (): void => {
      if (text !== '') out.push(...tokenizer.encode(text));
      text = '';
    };
    const walk = (list: readonly TemplatePiece[]): void => {
      for (const piece of list) {
        if ('special' in piece) {
          flush();
          out.push(special(piece.special));
        } else if ('boundary' in piece) {
          flush();
        } else if ('whenInstruction' in piece) {
          if (fields.instruction !== '') walk(piece.whenInstruction);
        } else {
          text += 'text' in piece ? piece.text : fields[piece.field];
        }
      }
    };
    walk(pieces);
    flush();
    return out;
  };
  // The suffix depends on the instruction only: rendered once per instruction (the last one kept).
  let last: { instruction: string; tokens: number[] } | undefined;
  const suffix = (instruction: string): number[] => {
    if (last?.instruction !== instruction)
      last = { instruction, tokens: render(template.suffix, { query: '', instruction }) };
    return last.tokens;
  };
  return {
    template,
    yesId: single(template.yes),
    noId: single(template.no),
    prefixTokens: (query, instruction) => render(template.prefix, { query, instruction }),
    documentTokens: (document, instruction) => [
      ...tokenizer.encode(template.documentLead + document),
      ...suffix(instruction),
    ],
    suffixLength: (instruction) => suffix(instruction).length,
  };
}
