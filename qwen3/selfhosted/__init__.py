"""Qwen served by vLLM, SGLang or Ollama (self-hosted), through their OpenAI-compatible endpoints."""
