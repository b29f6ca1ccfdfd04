"""Edit the generated source and rerun: a working copy per kernel variant, three-way safe.

The files (index, copies, baselines, stored TIRs, edits set aside) are edit_folder.py's;
this module is the policy: which copy a variant uses, and the decision carried out on it.

Which working copy a compile uses is decided from the kernel's TIR as handed to
lowering, with the target and pass configs (variants.py): the same TIR is the same
variant; the same code with other literals is another variant; changed code takes
over the working copy of the variant it succeeds (see ``_variant_file``).

On every traced compile, for each generated source (device, and host where it is
compiled from source), the working copy, the baseline and the latest codegen decide
(decision.py, whose table says each case): SYNCED, PATCHED (the edit is compiled),
REGENERATED or CONFLICT (the edit is kept aside). No edit is ever lost: a working copy
is only overwritten after it has been saved aside, and the message says how to bring it
back. Pure Python; no tvm import.
"""

from __future__ import annotations

import dataclasses
import os

from lower_trace.edits.decision import decide
from lower_trace.edits.edit_folder import EditFolder
from lower_trace.edits.entries import Group, IndexEntry, left_behind, text_digest
from lower_trace.edits.variants import Alignment, Variant, align, analyse, source_skeleton, tell_apart
from lower_trace.model import CopyState, EditOutcome, StaleReason, WorkingCopy
from lower_trace.store.paths import safe_component

EXTENSIONS = {"cuda": ".cu", "hip": ".hip", "c": ".c", "metal": ".metal", "wgsl": ".wgsl", "python": ".py"}
SUCCESSOR_SIMILARITY = 0.5  # changed code takes over a variant's copy only if it is mostly that code
_HISTORY = 8  # older codes remembered per working copy

class EditStore:
    """The working copies of one script (one folder, shared by all its runs).

    One instance lives as long as a traced run and keeps what it has read of the
    index in memory: a compile costs a few stats, reading its own working copy and
    baseline, and (for a new or changed variant) one appended line, however many
    variants there are. What another process changed is noticed by the index files'
    stats and read in. Decisions take a file lock, so two processes take turns.
    """

    def __init__(self, script_dir: str) -> None:
        self.files = EditFolder(script_dir)
        self.root = self.files.root
        self._copies: dict[str, IndexEntry] = {}  # file -> entry
        self._by_variant: dict[tuple[Group, str], str] = {}
        self._groups: dict[Group, list[str]] = {}  # files in creation order
        self._links: dict[tuple[Group, str], set[str]] = {}  # code -> the older codes its copies came from
        self._ref_of: dict[str, str] = {}  # skeleton -> the text key of a stored TIR with that code
        self._ref_texts: dict[str, str | None] = {}
        self._prior: set[tuple[Group, str]] = set()  # codes a group had before this run made any
        self._claimed: set[str] = set()  # copies a variant of this run compiled with
        self._open: dict[Group, dict[str, None]] = {}  # per group, its copies not claimed yet, oldest first
        self._projections: dict[tuple[str, str], tuple[Alignment, dict[tuple[str, ...], list[str]]]] = {}
        self._made: set[str] = set()  # copies this run created or handed to changed code
        self._fresh: set[str] = set()  # copies (re)read from the files by the refresh in progress
        self._edited: dict[str, set[str]] = {}  # kernel -> its edited copies (the siblings hint)
        self._legacy_base: dict[str, str | None] = {}
        self._order = 0

    # --- the index in memory, brought up to date with the files -------------------------

    def _refresh(self) -> None:
        """Bring what this process knows up to date with the files (a stat when nothing changed)."""
        changes = self.files.changes()
        if changes is None:
            return
        if changes.reloaded:
            self._copies, self._by_variant, self._groups, self._links, self._open = {}, {}, {}, {}, {}
            self._projections = {}
        for name, entry in changes.entries:
            self._apply(name, entry)
        if changes.journal:
            self._projections = {}  # another process's changes
        # The codes the group has now, as read (not each step of the journal), and not made by this run.
        for name in self._fresh - self._made:
            entry = self._copies.get(name)
            if entry is not None and entry.variant:
                self._prior.add((entry.group, entry.skeleton))
        self._fresh.clear()

    def _apply(self, name: str, entry: IndexEntry | None) -> None:
        """Take one entry into memory (None: one that was not well formed, skipped)."""
        if entry is None:
            return
        previous = self._copies.get(name)
        if previous is not None:
            if self._by_variant.get((previous.group, previous.variant)) == name:
                del self._by_variant[(previous.group, previous.variant)]
            if previous.group != entry.group:
                self._groups[previous.group].remove(name)
                self._open.get(previous.group, {}).pop(name, None)
                previous = None
        self._copies[name] = entry
        group = entry.group
        if previous is None:
            files = self._groups.setdefault(group, [])
            files.append(name)
            if len(files) > 1 and self._copies[files[-2]].order > entry.order:
                files.sort(key=lambda f: self._copies[f].order)
            if name not in self._claimed:
                self._open.setdefault(group, {})[name] = None
        if entry.variant:
            self._by_variant.setdefault((group, entry.variant), name)
            self._links.setdefault((group, entry.skeleton), set()).update(entry.history)
            self._ref_of.setdefault(entry.skeleton, entry.reference)
        self._fresh.add(name)
        self._order = max(self._order, entry.order + 1, entry.taken + 1)

    def _save(self, name: str) -> None:
        self.files.save(name, self._copies)

    # --- which working copy a variant uses ----------------------------------------------

    def _variant_file(self, group: Group, variant: Variant, latest: str) -> str:
        """The working copy for this variant, deciding (and recording) it the first time.

        1. The same variant seen before (same TIR, target, pass configs): its copy.
        2. A copy from an older lower-trace (no variant known) whose baseline is exactly
           this codegen: it was made for this variant.
        3. Code the group already had before this run (other literals): a new variant,
           unless the code is the successor of older code whose copies this run has not
           claimed yet, and one of them has exactly these literals: that one.
        4. Code the group did not have: the kernel's source changed. Its predecessor is
           the unclaimed copy of mostly the same code (similarity at least one half)
           whose literals agree with this variant's in the most aligned places; ties go
           to the older copy. With no such copy, a copy from an older lower-trace whose
           generated code is other code; else a new variant.
        Within one run a copy is claimed once: two variants never share a predecessor.
        """
        name = self._by_variant.get((group, variant.key))
        if name is not None:
            self._claim(group, name)
            return name
        name = self._legacy_match(group, latest)
        if name is None:
            if (group, variant.skeleton) in self._prior:
                name = self._successor_of(group, variant, self._links.get((group, variant.skeleton), set()), exact=True)
            else:
                name = self._successor_of(group, variant, None, exact=False) or self._legacy_successor(group, latest)
        if name is None:
            name, order, history = self._new_name(group, variant), self._order, []
        else:
            old = self._copies[name]
            order, history = old.order, [code for code in old.history if code != old.skeleton]
            if old.skeleton and old.skeleton != variant.skeleton:
                history.append(old.skeleton)
        self._claim(group, name)
        self._made.add(name)
        self._take(name, group, variant, order, history[-_HISTORY:])
        self._save(name)
        return name

    def _claim(self, group: Group, name: str) -> None:
        self._claimed.add(name)
        self._open.get(group, {}).pop(name, None)

    def _unclaimed(self, group: Group) -> list[str]:
        return list(self._open.get(group, ()))

    def _successor_of(self, group: Group, variant: Variant, codes: set[str] | None, exact: bool) -> str | None:
        """The unclaimed copy this variant's (changed) code succeeds, see _variant_file."""
        families: dict[str, list[str]] = {}  # stored TIR -> the unclaimed copies made from it
        for name in self._unclaimed(group):
            entry = self._copies[name]
            if entry.variant and entry.skeleton != variant.skeleton and (codes is None or entry.skeleton in codes):
                families.setdefault(entry.reference, []).append(name)
        best: tuple[int, int] | None = None
        chosen = None
        for reference, names in families.items():
            found = self._projected(reference, variant)
            if found is None:
                continue
            alignment, by_literals = found
            if not exact and alignment.similarity < SUCCESSOR_SIMILARITY:
                continue
            open_names = set(names)
            wanted = (*tuple(variant.constants[j] for _, j in alignment.pairs), variant.config)
            same = [name for name in by_literals.get(wanted, ()) if name in open_names]
            if same:  # the usual case, found without comparing to every copy
                candidates = [(len(wanted), name) for name in same]
            elif exact:
                continue
            else:
                candidates = []
                for literals, members in by_literals.items():
                    agree = sum(a == b for a, b in zip(literals, wanted, strict=False))
                    candidates.extend((agree, name) for name in members if name in open_names)
            for agree, name in candidates:
                score = (-agree, self._copies[name].order)
                if best is None or score < best:
                    best, chosen = score, name
        return chosen

    def _projected(self, reference: str, variant: Variant) -> tuple[Alignment, dict[tuple[str, ...], list[str]]] | None:
        """How a stored TIR's literals align with this code, and its copies by their aligned
        literals (built once per pair of codes)."""
        key = (reference, variant.skeleton)
        if key not in self._projections:
            old_text = self._ref_text(reference)
            if old_text is None:
                return None
            alignment = align(old_text, variant.text)
            by_literals: dict[tuple[str, ...], list[str]] = {}
            for name, entry in self._copies.items():
                constants = self._constants(entry) if entry.reference == reference else None
                if constants is not None:
                    literals = (*tuple(constants[i] for i, _ in alignment.pairs), entry.config)
                    by_literals.setdefault(literals, []).append(name)
            self._projections[key] = (alignment, by_literals)
        return self._projections[key]

    def _legacy_match(self, group: Group, latest: str) -> str | None:
        for name in self._unclaimed(group):
            if not self._copies[name].variant and self._legacy_baseline(name) == latest:
                return name
        return None

    def _legacy_successor(self, group: Group, latest: str) -> str | None:
        """An old copy of other generated code (not just other literals): the code changed."""
        for name in self._unclaimed(group):
            if not self._copies[name].variant:
                baseline = self._legacy_baseline(name)
                if baseline is not None and source_skeleton(baseline) != source_skeleton(latest):
                    return name
        return None

    def _legacy_baseline(self, name: str) -> str | None:
        if name not in self._legacy_base:
            self._legacy_base[name] = self.files.read_baseline(name)
        return self._legacy_base[name]

    def _new_name(self, group: Group, variant: Variant) -> str:
        """The kernel's name for its first copy; others add a short key: gemm-3fa9c1.cu.
        A host copy takes the key of its device copy (gemm-3fa9c1.host.c)."""
        kernel, signature, role, language = group
        stem = safe_component(kernel, fallback="kernel")
        suffix = ("" if role == "device" else f".{safe_component(role)}") + EXTENSIONS.get(language, ".txt")
        keys = ["", variant.key[:6], variant.key[:10], variant.key]
        if role != "device":
            devices = (g for g in self._groups if g[:3] == (kernel, signature, "device") and (g, variant.key) in self._by_variant)
            device = next((self._by_variant[(g, variant.key)] for g in devices), None)
            if device is not None and device.startswith(stem):
                head = os.path.splitext(device)[0][len(stem) :]
                keys.insert(0, head[1:] if head.startswith("-") else "")
        for key in keys:
            name = f"{stem}-{key}{suffix}" if key else f"{stem}{suffix}"
            if name not in self._copies:
                return name
        n = 2
        while f"{stem}-{variant.key[:6]}-{n}{suffix}" in self._copies:
            n += 1
        return f"{stem}-{variant.key[:6]}-{n}{suffix}"

    def _take(self, name: str, group: Group, variant: Variant, order: int, history: list[str]) -> None:
        """The copy `name` now belongs to `variant` (a new copy, or one that changed code takes over)."""
        reference = self._reference_for(variant)
        base = analyse(self._ref_text(reference) or variant.text).constants
        differs = tuple((i, c) for i, (c, b) in enumerate(zip(variant.constants, base, strict=False)) if c != b)
        # `taken` orders take-overs (which code the kernel left, see left_behind); a failed edit stays failed.
        failed = self._copies[name].failed if name in self._copies else ""
        entry = IndexEntry(
            *group, variant=variant.key, skeleton=variant.skeleton, reference=reference, config=variant.config,
            constants=differs, order=order, taken=self._order, failed=failed, history=tuple(history),
        )
        self._apply(name, entry)

    def _reference_for(self, variant: Variant) -> str:
        """A stored TIR with this variant's code: each copy keeps only the literals it differs in."""
        reference = self._ref_of.get(variant.skeleton)
        if reference is not None and self._ref_text(reference) is not None:
            return reference
        reference = variant.text_key
        self.files.store_tir(reference, variant.text)
        self._ref_texts[reference] = variant.text
        self._ref_of[variant.skeleton] = reference
        return reference

    def _ref_text(self, reference: str) -> str | None:
        if not reference:
            return None
        if reference not in self._ref_texts:
            self._ref_texts[reference] = self.files.read_tir(reference)
        return self._ref_texts[reference]

    def _constants(self, entry: IndexEntry) -> tuple[str, ...] | None:
        text = self._ref_text(entry.reference)
        if text is None:
            return None
        values = list(analyse(text).constants)
        for index, value in entry.constants:
            if index < len(values):
                values[index] = value
        return tuple(values)

    # --- the decision ---------------------------------------------------------------------

    def resolve(self, kernel: str, signature: str, role: str, language: str, latest: str, tir: str = "", config: str = "") -> EditOutcome:
        """Decide what to compile for this kernel variant's generated source, updating the files.

        tir is the kernel as handed to lowering and config its target and pass configs:
        together they say which variant this is (one variant per signature without them).
        """
        variant = analyse(tir, config)
        with self.files.locked():
            self._refresh()
            name = self._variant_file(Group(kernel, signature, role, language), variant, latest)
            outcome = self._decide(name, latest)
            if outcome.created:
                outcome = EditOutcome(outcome.status, outcome.path, outcome.compile_text, created=True, siblings=self._edited_siblings(kernel, name))
            edited = self._edited.get(kernel)
            if edited is not None:
                (edited.add if outcome.uses_edit else edited.discard)(name)
            return outcome

    def _decide(self, name: str, latest: str) -> EditOutcome:
        """The three-way decision (decision.py) on this copy's files, carried out."""
        working = self.files.read_copy(name)
        baseline = self.files.read_baseline(name)
        self._legacy_base.pop(name, None)
        decision = decide(working, baseline, latest)
        backup = base = ""
        if decision.set_aside and working is not None:
            backup, base = self.files.set_aside(name, working, baseline or "")
        if decision.write_baseline:
            self.files.write_baseline(name, latest)
        if decision.write_copy:
            self.files.write_copy(name, latest)
        compiled = working if decision.compiles_edit and working is not None else latest
        return EditOutcome(decision.status, self.files.copy_path(name), compiled, backup, base, created=decision.created)

    def compiled(self, path: str, failed: bool, text: str | None = None) -> None:
        """A compile that used the edit in `path` (PATCHED) ended: remember a failure in the index,
        forget it once that text compiles. text is what was compiled (None: the file as it is now)."""
        name = os.path.basename(path)
        if os.path.dirname(os.path.abspath(path)) != os.path.abspath(self.root):
            return
        with self.files.locked():
            self._refresh()
            entry = self._copies.get(name)
            if entry is None:
                return
            if text is None:
                text = self.files.read_copy(name)  # `path` is in this folder (checked above)
            digest = text_digest(text) if text is not None else ""
            mark = digest if failed else ("" if entry.failed == digest else entry.failed)
            if mark != entry.failed:
                self._apply(name, dataclasses.replace(entry, failed=mark))
                self._save(name)

    def _edited_siblings(self, kernel: str, name: str) -> tuple[str, ...]:
        """The kernel's other edited copies; read once per run, then kept up to date here."""
        if kernel not in self._edited:
            mine = [f for f, e in self._copies.items() if e.kernel == kernel]
            self._edited[kernel] = {f for f in mine if self._state(f, self.files.read_copy(f)) is CopyState.EDITED}
        found = sorted(self._edited[kernel] - {name}, key=lambda f: self._copies[f].order if f in self._copies else 0)
        return tuple(self.files.copy_path(f) for f in found)

    def _state(self, name: str, working: str | None) -> CopyState:
        """The working copy's text against its baseline."""
        if working is None:
            return CopyState.MISSING
        return CopyState.EDITED if working != self.files.read_baseline(name) else CopyState.AS_GENERATED

    # --- listing and reset ---------------------------------------------------------------

    def entries(self) -> list[WorkingCopy]:
        """Every working copy, by kernel and then creation: its state, what tells it apart from
        the kernel's other copies (`variant`), and why its variant no longer compiles as it
        stands (`stale`; None when it does):

        - FAILED: the last compile that used this edit, exactly as the file holds it now, failed;
        - CODE_CHANGED: the kernel's code changed and this variant has not been compiled since
          (entries.left_behind): the copy belongs to no code compiled any more.
        """
        if not self.files.exists():
            return []
        self._refresh()
        out = []
        for group, names in self._groups.items():
            entries = [self._copies[name] for name in names]
            told = tell_apart([(n, e.skeleton, self._ref_text(e.reference), self._constants(e), e.config) for n, e in zip(names, entries, strict=False)])
            behind = left_behind(dict(zip(names, entries, strict=False)))
            others = [g for g in self._groups if g.kernel == group.kernel and g.role == group.role and g != group]
            for name, entry in zip(names, entries, strict=False):
                parts = [entry.signature] if others or len(names) == 1 else []
                if any(g.signature == group.signature for g in others):  # the same buffers in another language
                    parts.append(f"for {group.language}")
                parts.append(told.get(name, "") if entry.variant else "from an older lower-trace, not matched to a variant yet")
                working = self.files.read_copy(name)
                stale = StaleReason.FAILED if entry.failed and working is not None and text_digest(working) == entry.failed else None
                out.append(WorkingCopy(
                    *group, file=name, path=self.files.copy_path(name), state=self._state(name, working),
                    variant="; ".join(p for p in parts if p), stale=stale or (StaleReason.CODE_CHANGED if name in behind else None),
                ))
        out = _tell_rows_apart(out, self._copies)
        return sorted(out, key=lambda row: (row.kernel, self._copies[row.file].order))

    def holds(self, kernel: str) -> bool:
        """Whether kernel (a kernel's name, or a working copy's file name with or without extension) names a working copy here."""
        return any(_named(copy, kernel) for copy in self.entries())

    def reset(self, kernel: str) -> list[tuple[str, str]]:
        """Return a kernel's working copies to the generated source; edits are saved aside.

        kernel may be a kernel name (all its working copies) or one working copy's file
        name, with or without extension. Returns (path, backup) pairs.
        """
        done = []
        with self.files.locked():
            for copy in self.entries():
                if not _named(copy, kernel):
                    continue
                baseline = self.files.read_baseline(copy.file)
                if baseline is None:
                    continue
                working = self.files.read_copy(copy.file)
                backup = ""
                if working is not None and working != baseline:
                    backup, _ = self.files.set_aside(copy.file, working, baseline)
                self.files.write_copy(copy.file, baseline)
                done.append((copy.path, backup))
        return done


def _named(copy: WorkingCopy, kernel: str) -> bool:
    """reset's and holds' name: the kernel's, or the copy's file name with or without extension."""
    return kernel in (copy.kernel, copy.file, os.path.splitext(copy.file)[0])


def _tell_rows_apart(rows: list[WorkingCopy], copies: dict[str, IndexEntry]) -> list[WorkingCopy]:
    """The rows, where copies of one kernel and role whose descriptions are still alike (their
    stored TIR is gone, or what tells them apart was cut short) add their variant's key."""
    seen: dict[tuple[str, str, str], int] = {}
    for row in rows:
        key = (row.kernel, row.role, row.variant)
        seen[key] = seen.get(key, 0) + 1
    out = []
    for row in rows:
        if seen[(row.kernel, row.role, row.variant)] > 1:
            key = copies[row.file].variant
            row = dataclasses.replace(row, variant="; ".join(p for p in (row.variant, f"variant {key[:10]}" if key else "") if p))
        out.append(row)
    return out
