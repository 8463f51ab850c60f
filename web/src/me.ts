// Who is signed in, asked once per page load and shared: the header names them, and pages offer
// the actions only to those the API lets act (an experiment's owner, or an admin).
import { useQuery } from "@tanstack/react-query";
import { api, ok, type User } from "./api/client";

export function useMe() {
  return useQuery({
    queryKey: ["me"],
    queryFn: () => ok(api.GET("/api/v1/me")),
    staleTime: 60_000,
  });
}

/** Whether the signed-in user may change what `owner` owns; unknown until `me` is read. */
export function useMayAct(owner: string): boolean {
  const me = useMe().data;
  return mayAct(me, owner);
}

export function mayAct(me: User | undefined, owner: string): boolean {
  return me !== undefined && (me.admin || me.username === owner);
}
