export function buildDashboardEditor(): Promise<void>;
