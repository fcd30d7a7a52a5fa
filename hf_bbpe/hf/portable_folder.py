"""Saving and pushing, shared by ``BBPETokenizer`` and ``BBPETokenizerFast``.

``save_pretrained`` runs transformers' save into a folder built beside the target, lets the
class finish it (``_finish_folder``: the portable config, the stop tokens, the remote code if
asked; see saved_folder.py) and switches it in whole. ``push_to_hub`` uploads that folder with
a model card.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from ..engine.files.atomic_write import replaced_folder
from .model_card import push_with_card
from .remote_code import wants_remote_code
from .saved_folder import saved_files

logger = logging.getLogger(__name__)


class PortableFolder:
    """Saving and pushing, for both classes: transformers' save, then the folder made whole and
    portable by the class's ``_finish_folder`` (see saved_folder.py); a push uploads that folder
    with a model card."""

    def save_pretrained(
        self,
        save_directory: str | os.PathLike,
        legacy_format: bool | None = None,
        filename_prefix: str | None = None,
        push_to_hub: bool = False,
        remote_code: bool | None = None,
        **kwargs: Any,
    ) -> tuple[str, ...]:
        """transformers' save, then ``_finish_folder``. With ``push_to_hub=True`` the folder is
        saved first and then pushed with ``push_to_hub`` (``repo_id`` defaults to the folder's
        name), so the Hub gets the rewritten config.

        The folder holds tokenizer files only, which load anywhere without this package. With
        ``remote_code=True`` it also holds the code of these classes, and ``auto_map`` names them
        for ``trust_remote_code=True`` (see remote_code.py). ``None`` (the default) keeps what the
        folder this tokenizer was loaded from had: no code for a new tokenizer."""
        remote_code = wants_remote_code(self, remote_code)
        if push_to_hub:
            hub = {key: kwargs.pop(key) for key in _HUB_KEYS if key in kwargs}
            files = self.save_pretrained(save_directory, legacy_format, filename_prefix, remote_code=remote_code,
                                         **kwargs)
            self.push_to_hub(hub.pop("repo_id", Path(save_directory).name), remote_code=remote_code, **hub)
            return files
        self._check_savable()
        prefix = f"{filename_prefix}-" if filename_prefix else ""
        target = Path(save_directory)
        # the whole folder is built beside the target and switched in at once (atomic_write.py);
        # files that are not a tokenizer's (weights, a README) are carried over
        with replaced_folder(target, saved_files(prefix)) as stage:
            files = super().save_pretrained(str(stage), legacy_format=legacy_format,  # type: ignore[misc]
                                            filename_prefix=filename_prefix, **kwargs)
            files = tuple(files) + self._finish_folder(stage, prefix, remote_code)
        return tuple(str(target / Path(file).relative_to(stage)) if Path(file).is_relative_to(stage) else file
                     for file in files)

    def _check_savable(self) -> None:
        """Raise before anything is written if the folder could not be whole."""

    def _finish_folder(self, folder: Path, prefix: str, remote_code: bool) -> tuple[str, ...]:
        raise NotImplementedError

    def push_to_hub(self, repo_id: str, **options: Any) -> Any:
        """Upload the saved folder to the Hub with a model card (model_card.push_with_card: the
        metadata the Hub reads, a "Use in Transformers" snippet; an existing card keeps its text).
        Takes transformers' options (``commit_message``, ``private``, ``token``, ``revision``,
        ``create_pr``, ``tags``...) and ``base_model``, ``license``, ``pipeline_tag``, ``model_card``
        (a README.md's text to push instead of a new card), and ``remote_code`` as
        :meth:`save_pretrained` takes it. Returns the commit info."""
        for key in _PUSH_OPTIONS_FOR_WEIGHTS:
            options.pop(key, None)
        info, note = push_with_card(self, repo_id, **options)
        logger.info("pushed to %s: %s", repo_id, note)
        return info


_HUB_KEYS = ("repo_id", "commit_message", "private", "token", "create_pr", "revision", "commit_description",
             "tags", "base_model", "license", "pipeline_tag", "model_card")
"""``save_pretrained(..., push_to_hub=True)`` options that go to ``push_to_hub``."""
_PUSH_OPTIONS_FOR_WEIGHTS = ("use_temp_dir", "max_shard_size", "safe_serialization")
"""transformers' ``push_to_hub`` options that concern model weights or 4.57's working copy: accepted, unused."""
