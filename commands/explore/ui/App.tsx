/**
 * commands/explore/ui/App.tsx: the explorer. Holds the state (state.ts), routes keys
 * through keys.ts, asks the search loop for results whenever the search plan changes,
 * and lays the panes out for the terminal's current size.
 */
import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import { Box, Text, useApp, useInput, useStdout, type Key } from 'ink';
import type { CollectionSchema, SearchClient } from '../client.js';
import { commandText, curlCommand, fathomCommand } from '../command-line.js';
import { keyToAction, splitInput } from '../keys.js';
import { layout, type Pane } from '../layout.js';
import { planKey, searchPlan, userParams } from '../params.js';
import { SearchLoop } from '../search-loop.js';
import { initialState, reduce, type Action, type ExploreState, type InitialOptions } from '../state.js';
import { osc52 } from '../terminal.js';
import { CommandScreen } from './CommandScreen.js';
import { DetailPane, detailLines } from './DetailPane.js';
import { FacetPanel } from './FacetPanel.js';
import { Footer } from './Footer.js';
import { Header } from './Header.js';
import { HelpScreen } from './HelpScreen.js';
import { HitList } from './HitList.js';
import { QueryBar } from './QueryBar.js';
import { StatusLine } from './StatusLine.js';
import { useTerminalSize, type Size } from './use-terminal-size.js';

export interface AppProps {
  client: SearchClient;
  schema: CollectionSchema;
  initial?: InitialOptions;
  /** Pause after the last change before searching (ms). */
  debounceMs?: number;
  /** A fixed terminal size (tests); otherwise the real one, following resizes. */
  size?: Partial<Size>;
  /** Puts text on the clipboard; by default an OSC 52 sequence to the terminal. */
  copy?: (text: string) => void;
  /** Called when the user quits, before the app unmounts. */
  onQuit?: () => void;
}

function Separator({ height }: { height: number }) {
  return (
    <Box width={1} height={height} flexShrink={0}>
      <Text dimColor>{Array.from({ length: height }, () => '│').join('\n')}</Text>
    </Box>
  );
}

export function App({ client, schema, initial, debounceMs, size, copy, onQuit }: AppProps) {
  const { exit } = useApp();
  const { stdout } = useStdout();
  const terminal = useTerminalSize(size);
  const L = layout(terminal.columns, terminal.rows);

  // The state, with a ref that is current even between renders: keys that arrive in one
  // chunk (Tab then q) must each see the state the previous one left.
  const [state, setState] = useState<ExploreState>(() => initialState(schema, initial));
  const ref = useRef(state);
  const dispatch = useCallback((a: Action) => {
    const next = reduce(ref.current, a);
    if (next !== ref.current) {
      ref.current = next;
      setState(next);
    }
  }, []);

  const loop = useMemo(
    () =>
      new SearchLoop(
        client,
        schema.name,
        {
          onSearching: () => dispatch({ type: 'searching' }),
          onResults: (response, facetCounts) => dispatch({ type: 'results', response, facetCounts }),
          onError: (message) => dispatch({ type: 'failed', message }),
        },
        debounceMs,
      ),
    [client, schema.name, dispatch, debounceMs],
  );
  useEffect(() => () => loop.dispose(), [loop]);

  const plan = searchPlan(state);
  const key = planKey(plan);
  const searched = useRef(false);
  useEffect(() => {
    loop.request(plan, { immediate: !searched.current });
    searched.current = true;
  }, [loop, key]);

  const detailPane: Pane = L.detail;
  const detailHeight = detailPane.height - 1;

  const onKey = (input: string, k: Key) => {
    const current = ref.current;
    if (current.notice) dispatch({ type: 'notice', message: null });
    const detailMax = Math.max(0, detailLines(current, detailPane).length - detailHeight);
    const action = keyToAction(current, input, k, { detailHeight, detailMax });
    if (!action) return true;
    switch (action.type) {
      case 'quit':
        loop.dispose();
        onQuit?.();
        exit();
        return false;
      case 'refresh':
        void loop.run(searchPlan(current));
        return true;
      case 'copy': {
        const params = userParams(current);
        const cmd = action.what === 'fathom' ? fathomCommand(current.collection, params, client.source) : curlCommand(current.collection, params, client.source);
        (copy ?? ((t: string) => stdout.write(osc52(t))))(commandText(cmd));
        dispatch({ type: 'notice', message: `copied the ${action.what === 'fathom' ? 'fathom search' : 'curl'} command to the clipboard (OSC 52)` });
        return true;
      }
      default:
        dispatch(action);
        return true;
    }
  };
  useInput((input, k) => {
    for (const [i, key] of splitInput(input, k)) if (!onKey(i, key)) return;
  });

  if (state.overlay === 'help') {
    return (
      <Box flexDirection="column" width={L.columns} height={L.height}>
        <HelpScreen width={L.columns} height={L.height} />
      </Box>
    );
  }
  if (state.overlay === 'command') {
    return (
      <Box flexDirection="column" width={L.columns} height={L.height}>
        <CommandScreen state={state} source={client.source} width={L.columns} height={L.height} />
      </Box>
    );
  }
  return (
    <Box flexDirection="column" width={L.columns} height={L.height}>
      <Header state={state} source={client.source} width={L.columns} />
      <QueryBar state={state} width={L.columns} />
      <StatusLine state={state} />
      <Box flexDirection="row" height={L.body} width={L.columns}>
        {L.mode === 'wide' ? (
          <>
            <FacetPanel state={state} pane={L.facets} />
            <Separator height={L.body} />
            <HitList state={state} pane={L.hits} />
            <Separator height={L.body} />
          </>
        ) : (
          <>
            <Box flexDirection="column" width={L.hits.width} flexShrink={0}>
              <HitList state={state} pane={L.hits} />
              <FacetPanel state={state} pane={L.facets} />
            </Box>
            <Separator height={L.body} />
          </>
        )}
        <DetailPane state={state} pane={detailPane} />
      </Box>
      <Footer state={state} />
    </Box>
  );
}
