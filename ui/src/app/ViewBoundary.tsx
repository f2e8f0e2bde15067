// A view that throws while rendering shows what broke, in place, instead of blanking the whole window:
// the nav, the hub line and the other views stay usable (approvals must never disappear with a view).
import { Component, type ErrorInfo, type ReactNode } from "react";
import { visible } from "../lib/visible";

interface State {
  error: Error | null;
}

export class ViewBoundary extends Component<{ view: string; children: ReactNode }, State> {
  state: State = { error: null };

  static getDerivedStateFromError(error: Error): State {
    return { error };
  }

  componentDidCatch(error: Error, info: ErrorInfo) {
    console.error(`the ${this.props.view} view failed`, error, info.componentStack);
  }

  render() {
    if (!this.state.error) return this.props.children;
    return (
      <div role="alert" className="failure" data-testid="view-failed">
        <strong>The {this.props.view} view failed.</strong> The hub keeps running; other views still work.
        <pre className="mono small">{visible(`${this.state.error.name}: ${this.state.error.message}\n${this.state.error.stack ?? ""}`)}</pre>
        <button type="button" onClick={() => this.setState({ error: null })}>
          Try again
        </button>
      </div>
    );
  }
}
