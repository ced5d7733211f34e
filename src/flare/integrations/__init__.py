"""Bridges to other frameworks, each an optional extra imported only by name.

* :mod:`flare.integrations.langchain` (``pip install 'flare-rag[langchain]'``): a LangChain
  retriever as a flare :class:`~flare.retrieve.base.Retriever`, and :class:`~flare.Flare` as a
  LangChain ``Runnable`` that streams accepted sentences.
* :mod:`flare.integrations.llama_index` (``pip install 'flare-rag[llamaindex]'``): a LlamaIndex
  index or retriever as a flare retriever, and :class:`~flare.Flare` as a LlamaIndex query engine.

Filters are never dropped: an adapter passes them into the wrapped search where it can, and
otherwise refuses them with a :class:`~flare.errors.FilterError` before any search runs.
"""
